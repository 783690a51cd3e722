# Lending more than the quota: Kueue refuses it.
# expect: validate
# path: quotas[0].lending_limit
# message: less than or equal to the nominalQuota
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  cohort     = "training"
  quotas = [{ fleet = "training", gpu_resource = "nvidia.com/gpu", gpus = 32, lending_limit = 40 }] # <- diagnostic
}
