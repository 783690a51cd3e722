# A namespace that cannot exist.
# expect: validate
# path: namespaces
# message: not a valid name
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["Team A"] # <- diagnostic
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
}
