# An empty taint key.
# expect: validate
# path: taints[0].key
# message: must not be empty
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "", effect = "NoSchedule" }, # <- diagnostic
  ]
}
