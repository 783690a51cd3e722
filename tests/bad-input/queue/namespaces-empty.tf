# A queue that serves no namespace.
# expect: validate
# path: namespaces
# message: must not be empty
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = [] # <- diagnostic
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
}
