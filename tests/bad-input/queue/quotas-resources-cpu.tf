# cpu among the other resources: it has its own attribute, and Kueue covers a resource once.
# expect: validate
# path: quotas[0].resources.cpu
# message: has its own attribute
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{ fleet = "training", gpu_resource = "nvidia.com/gpu", gpus = 32, resources = { cpu = "8" } }] # <- diagnostic
}
