# all-disabled makes no MIG devices to time-slice.
# expect: validate
# path: replicas
# message: no MIG devices
resource "gpufleet_node_sharing" "this" {
  name       = "gpu-1"
  node_name  = "gpu-1"
  strategy   = "mig"
  mig_layout = "all-disabled"
  replicas   = 2 # <- diagnostic
}
