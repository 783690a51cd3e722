# Preempting to borrow while never reclaiming: Kueue refuses it.
# expect: validate
# path: preemption.borrow_within_cohort
# message: reclaimWithinCohort=Never
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  preemption = {
    borrow_within_cohort = "LowerPriority" # <- diagnostic
  }
}
