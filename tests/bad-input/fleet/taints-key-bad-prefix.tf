# The prefix of a taint key is a DNS subdomain (lower case).
# expect: validate
# path: taints[0].key
# message: not a DNS subdomain
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  taints = [
    { key = "Nvidia.com/gpu", effect = "NoSchedule" }, # <- diagnostic
  ]
}
