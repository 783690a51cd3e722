# A requirement key with a space.
# expect: validate
# path: requirements[0].key
# message: not a valid key
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack id", operator = "Exists" }, # <- diagnostic
  ]
}
