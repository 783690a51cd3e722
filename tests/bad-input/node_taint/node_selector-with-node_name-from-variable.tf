# Both targets, one known only at plan.
# expect: plan
# path: node_selector
# message: not both
variable "node" {
  default = "gpu-1"
}

resource "gpufleet_node_taint" "this" {
  node_name     = var.node
  node_selector = { gpu = "h100" } # <- diagnostic
  taints        = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
