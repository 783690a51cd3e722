# The node class name must be given.
# expect: validate
# path: node_class.name
# message: must not be empty
resource "gpufleet_fleet" "this" {
  name = "gpu"
  node_class = {
    group = "karpenter.kwok.sh"
    kind  = "KWOKNodeClass"
    name  = "" # <- diagnostic
  }
}
