# The node class kind must be given.
# expect: validate
# path: node_class.kind
# message: must not be empty
resource "gpufleet_fleet" "this" {
  name = "gpu"
  node_class = {
    group = "karpenter.kwok.sh"
    kind  = "" # <- diagnostic
    name  = "default"
  }
}
