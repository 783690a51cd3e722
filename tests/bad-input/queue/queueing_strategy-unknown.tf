# A queueing strategy Kueue does not have.
# expect: validate
# path: queueing_strategy
# message: is not one of
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  queueing_strategy = "FIFO" # <- diagnostic
}
