# At least 1 Gbps.
# expect: validate
# path: network_bandwidth_min_gbps
# message: outside
resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme               = "aws"
  network_bandwidth_min_gbps = 0 # <- diagnostic
}
