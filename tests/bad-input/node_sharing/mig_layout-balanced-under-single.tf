# Under the single MIG strategy NVIDIA's device plugin refuses MIG devices of several types on a node.
# expect: validate
# path: mig_layout
# message: invalid MIG configuration
resource "gpufleet_node_sharing" "this" {
  name         = "gpu-1"
  node_name    = "gpu-1"
  strategy     = "mig"
  mig_layout   = "all-balanced" # <- diagnostic
  mig_strategy = "single"
}
