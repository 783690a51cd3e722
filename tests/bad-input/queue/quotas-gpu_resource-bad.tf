# A GPU resource that is no resource name.
# expect: validate
# path: quotas[0].gpu_resource
# message: gpu_resource
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{ fleet = "training", gpu_resource = "nvidia.com/gpu!", gpus = 32 }] # <- diagnostic
}
