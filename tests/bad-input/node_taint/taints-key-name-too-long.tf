# The name part of a key holds at most 63 characters.
# expect: validate
# path: taints[0].key
# message: not a valid key
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", effect = "NoSchedule" }, # <- diagnostic
  ]
}
