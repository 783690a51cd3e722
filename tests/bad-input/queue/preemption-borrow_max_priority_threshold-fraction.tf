# A priority is a whole number.
# expect: validate
# path: preemption.borrow_max_priority_threshold
# message: not a whole number
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  preemption = {
    borrow_max_priority_threshold = 0.5 # <- diagnostic
  }
}
