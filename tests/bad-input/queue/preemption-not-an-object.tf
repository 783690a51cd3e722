# preemption is a block of policies.
# expect: validate
# path: preemption
# message: object required
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  preemption = "Never" # <- diagnostic
}
