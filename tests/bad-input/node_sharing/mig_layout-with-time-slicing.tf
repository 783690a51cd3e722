# A MIG layout needs strategy = "mig".
# expect: validate
# path: mig_layout
# message: needs `strategy = "mig"`
resource "gpufleet_node_sharing" "this" {
  name       = "gpu-1"
  node_name  = "gpu-1"
  strategy   = "time_slicing"
  replicas   = 4
  mig_layout = "all-1g.10gb" # <- diagnostic
}
