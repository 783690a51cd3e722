# The prefix of a taint key is a DNS subdomain.
# expect: validate
# path: taints[0].key
# message: not a DNS subdomain
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = "NVIDIA.com/gpu", effect = "NoSchedule" }, # <- diagnostic
  ]
}
