# A bad effect known only at plan.
# expect: plan
# path: taints[0].effect
# message: is not one of
variable "effect" {
  default = "Drain"
}

resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "workload", effect = var.effect }, # <- diagnostic
  ]
}
