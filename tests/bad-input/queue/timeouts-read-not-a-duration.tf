# timeouts.read is a word, not a duration.
# expect: validate
# path: timeouts.read
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
    read = "soon" # <- diagnostic
  }
}
