# timeouts.delete is a word, not a duration.
# expect: validate
# path: timeouts.delete
# message: duration
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  timeouts = {
    delete = "soon" # <- diagnostic
  }
}
