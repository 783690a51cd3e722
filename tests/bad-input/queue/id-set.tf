# id is computed: a configuration cannot set it.
# expect: validate
# path: id
# message: is set by the provider
resource "gpufleet_queue" "this" {
  id         = "team-a" # <- diagnostic
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
}
