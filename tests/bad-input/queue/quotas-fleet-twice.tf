# Two quotas on one fleet: Kueue refuses a flavor listed twice.
# expect: validate
# path: quotas[1].fleet
# message: a flavor appears once
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [
    { fleet = "training", gpu_resource = "nvidia.com/gpu", gpus = 32 },
    { fleet = "training", gpu_resource = "nvidia.com/gpu", gpus = 8 }, # <- diagnostic
  ]
}
