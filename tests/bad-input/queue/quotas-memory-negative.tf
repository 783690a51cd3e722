# A negative memory quota.
# expect: validate
# path: quotas[0].memory
# message: negative
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{ fleet = "training", gpu_resource = "nvidia.com/gpu", gpus = 32, memory = "-1Gi" }] # <- diagnostic
}
