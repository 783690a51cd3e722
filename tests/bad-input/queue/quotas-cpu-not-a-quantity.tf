# cpu is no quantity.
# expect: validate
# path: quotas[0].cpu
# message: not a kubernetes quantity
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{ fleet = "training", gpu_resource = "nvidia.com/gpu", gpus = 32, cpu = "lots" }] # <- diagnostic
}
