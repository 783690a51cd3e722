# The node class API group must be given.
# expect: validate
# path: node_class.group
# message: must not be empty
resource "gpufleet_fleet" "this" {
  name = "gpu"
  node_class = {
    group = "" # <- diagnostic
    kind  = "KWOKNodeClass"
    name  = "default"
  }
}
