# MIG layouts are per fleet or node; the cluster-wide default has none.
# expect: validate
# path: mig_layout
# message: not expected here
resource "gpufleet_gpu_sharing" "this" {
  strategy   = "none"
  mig_layout = "all-1g.10gb" # <- diagnostic
}
