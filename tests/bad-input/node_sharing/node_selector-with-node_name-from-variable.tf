# Both targets, one known only at plan.
# expect: plan
# path: node_selector
# message: not both
variable "node" {
  default = "gpu-1"
}

resource "gpufleet_node_sharing" "this" {
  name          = "l4"
  node_name     = var.node
  node_selector = { gpu = "l4" } # <- diagnostic
  strategy      = "none"
}
