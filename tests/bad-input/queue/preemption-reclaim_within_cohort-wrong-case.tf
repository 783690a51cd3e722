# Policies are spelled as Kueue spells them.
# expect: validate
# path: preemption.reclaim_within_cohort
# message: is not one of
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  preemption = {
    reclaim_within_cohort = "any" # <- diagnostic
  }
}
