# Not a bool.
# expect: validate
# path: manage_cluster_policy
# message: bool is required
resource "gpufleet_gpu_sharing" "this" {
  strategy              = "none"
  manage_cluster_policy = "when-installed" # <- diagnostic
}
