# An empty selector matches every node, control plane included.
# expect: validate
# path: node_selector
# message: empty node selector
resource "gpufleet_node_sharing" "this" {
  name          = "l4"
  node_selector = {} # <- diagnostic
  strategy      = "none"
}
