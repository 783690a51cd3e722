# MIG is per node (fleets, node_sharing); the cluster-wide default has none.
# expect: validate
# path: strategy
# message: is not one of
resource "gpufleet_gpu_sharing" "this" {
  strategy = "mig" # <- diagnostic
}
