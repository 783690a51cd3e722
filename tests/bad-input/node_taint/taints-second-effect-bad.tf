# The second taint's effect is wrong.
# expect: validate
# path: taints[1].effect
# message: is not one of
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "workload", effect = "NoSchedule" },
    { key = "gpu", effect = "NoExecution" }, # <- diagnostic
  ]
}
