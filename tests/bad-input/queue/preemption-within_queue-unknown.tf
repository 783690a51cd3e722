# A policy Kueue does not have.
# expect: validate
# path: preemption.within_queue
# message: is not one of
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  preemption = {
    within_queue = "Always" # <- diagnostic
  }
}
