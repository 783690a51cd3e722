# One target: node_name or node_selector.
# expect: validate
# path: node_selector
# message: not both
resource "gpufleet_node_sharing" "this" {
  name          = "l4"
  node_name     = "gpu-1"
  node_selector = { gpu = "l4" } # <- diagnostic
  strategy      = "none"
}
