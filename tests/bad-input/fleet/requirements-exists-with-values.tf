# Exists takes no values.
# expect: validate
# path: requirements[0].values
# message: take no values
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack", operator = "Exists", values = ["r1"] }, # <- diagnostic
  ]
}
