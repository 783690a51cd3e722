# The name is not a DNS-1123 label (jobs name it in a label value).
# expect: validate
# path: name
# message: not a valid name
resource "gpufleet_queue" "this" {
  name       = "Team-A" # <- diagnostic
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
}
