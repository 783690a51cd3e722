# Not a MIG strategy of NVIDIA's device plugin.
# expect: validate
# path: mig_strategy
# message: is not one of
resource "gpufleet_node_sharing" "this" {
  name         = "gpu-1"
  node_name    = "gpu-1"
  strategy     = "mig"
  mig_layout   = "all-1g.10gb"
  mig_strategy = "double" # <- diagnostic
}
