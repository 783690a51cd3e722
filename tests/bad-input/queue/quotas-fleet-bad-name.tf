# A fleet name that is no DNS-1123 label.
# expect: validate
# path: quotas[0].fleet
# message: not a valid name
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{ fleet = "Training Fleet", gpu_resource = "nvidia.com/gpu", gpus = 32 }] # <- diagnostic
}
