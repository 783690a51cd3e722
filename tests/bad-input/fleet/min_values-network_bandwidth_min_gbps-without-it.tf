# minValues for a requirement network_bandwidth_min_gbps does not generate.
# expect: plan
# path: min_values.network_bandwidth_min_gbps
# message: is not set
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "default" }
  label_scheme = "aws"
  accelerators = ["H100"]
  min_values   = { network_bandwidth_min_gbps = 2 } # <- diagnostic
}
