# node_class needs group, kind and name.
# expect: validate
# path: node_class
# message: kind
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", name = "default" } # <- diagnostic
}
