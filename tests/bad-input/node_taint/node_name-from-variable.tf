# A bad node name known only at plan.
# expect: plan
# path: node_name
# message: not a valid name
variable "node" {
  default = "GPU_1"
}

resource "gpufleet_node_taint" "this" {
  node_name = var.node # <- diagnostic
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
