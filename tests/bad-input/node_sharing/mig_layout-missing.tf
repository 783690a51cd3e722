# MIG needs a layout.
# expect: validate
# path: mig_layout
# message: needs a `mig_layout`
resource "gpufleet_node_sharing" "this" { # <- diagnostic
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "mig"
}
