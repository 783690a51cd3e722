# A weight that is no quantity.
# expect: validate
# path: fair_sharing_weight
# message: not a kubernetes quantity
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  fair_sharing_weight = "heavy" # <- diagnostic
}
