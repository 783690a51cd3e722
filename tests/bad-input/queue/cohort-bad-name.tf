# A cohort name that is no DNS-1123 label.
# expect: validate
# path: cohort
# message: not a valid name
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  cohort     = "Training Teams" # <- diagnostic
}
