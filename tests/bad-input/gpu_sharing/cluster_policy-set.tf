# cluster_policy is computed.
# expect: validate
# path: cluster_policy
# message: is set by the provider
resource "gpufleet_gpu_sharing" "this" {
  strategy       = "none"
  cluster_policy = "default" # <- diagnostic
}
