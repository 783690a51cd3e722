# A duplicate known only at plan.
# expect: plan
# path: taints[1]
# message: duplicate taint
variable "key" {
  default = "workload"
}

resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "workload", effect = "NoSchedule" },
    { key = var.key, effect = "NoSchedule" }, # <- diagnostic
  ]
}
