# Label values have no slashes.
# expect: validate
# path: node_selector
# message: label value
resource "gpufleet_node_sharing" "this" {
  name          = "l4"
  node_selector = { gpu = "nvidia/l4" } # <- diagnostic
  strategy      = "none"
}
