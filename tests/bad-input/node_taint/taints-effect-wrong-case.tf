# Effects are case-sensitive.
# expect: validate
# path: taints[0].effect
# message: is not one of
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "workload", effect = "NOSCHEDULE" }, # <- diagnostic
  ]
}
