# An object where a list belongs.
# expect: validate
# path: taints
# message: list of object required
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints    = { key = "workload", effect = "NoSchedule" } # <- diagnostic
}
