# An empty name.
# expect: validate
# path: name
# message: not a valid name
resource "gpufleet_fleet" "this" {
  name       = "" # <- diagnostic
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}
