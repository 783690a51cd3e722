# GPUs are whole.
# expect: validate
# path: quotas[0].gpus
# message: not a whole number
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{ fleet = "training", gpu_resource = "nvidia.com/gpu", gpus = 1.5 }] # <- diagnostic
}
