# A taint key with a space.
# expect: validate
# path: taints[0].key
# message: not a valid key
resource "gpufleet_node_join" "this" {
  taints = [
    { key = "gpu type", effect = "NoSchedule" }, # <- diagnostic
  ]
}
