# gpu_resource is computed from gpu_sharing.
# expect: validate
# path: gpu_resource
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  gpu_resource = "nvidia.com/gpu.shared" # <- diagnostic
}
