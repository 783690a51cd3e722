# MIG devices are only renamed when time-sliced.
# expect: validate
# path: rename_by_default
# message: only renamed when time-sliced
resource "gpufleet_node_sharing" "this" {
  name              = "gpu-1"
  node_name         = "gpu-1"
  strategy          = "mig"
  mig_layout        = "all-1g.10gb"
  rename_by_default = true # <- diagnostic
}
