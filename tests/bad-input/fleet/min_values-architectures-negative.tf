# A negative count of values.
# expect: validate
# path: min_values.architectures
# message: outside
resource "gpufleet_fleet" "this" {
  name          = "gpu"
  node_class    = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  architectures = ["amd64"]
  min_values    = { architectures = -1 } # <- diagnostic
}
