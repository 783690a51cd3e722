# Time slicing needs to know how many pods share a GPU.
# expect: validate
# path: gpu_sharing.replicas
# message: needs `replicas`
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "time_slicing" } # <- diagnostic
}
