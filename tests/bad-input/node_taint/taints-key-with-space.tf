# A taint key with a space.
# expect: validate
# path: taints[0].key
# message: not a valid key
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "gpu type", effect = "NoSchedule" }, # <- diagnostic
  ]
}
