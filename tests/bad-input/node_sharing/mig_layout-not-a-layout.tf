# No GPU has a 9g profile.
# expect: validate
# path: mig_layout
# message: is not a MIG layout
resource "gpufleet_node_sharing" "this" {
  name       = "gpu-1"
  node_name  = "gpu-1"
  strategy   = "mig"
  mig_layout = "all-9g.99gb" # <- diagnostic
}
