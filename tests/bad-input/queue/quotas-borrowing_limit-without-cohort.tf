# A borrowing limit on a queue without a cohort: Kueue refuses it.
# expect: validate
# path: quotas[0].borrowing_limit
# message: must be nil when cohort is empty
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{ fleet = "training", gpu_resource = "nvidia.com/gpu", gpus = 32, borrowing_limit = 8 }] # <- diagnostic
}
