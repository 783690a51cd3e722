# Label keys have no spaces.
# expect: validate
# path: node_selector
# message: gpu model
resource "gpufleet_node_sharing" "this" {
  name          = "l4"
  node_selector = { "gpu model" = "l4" } # <- diagnostic
  strategy      = "none"
}
