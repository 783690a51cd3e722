# Sharing a GPU one way is not sharing.
# expect: validate
# path: gpu_sharing.replicas
# message: is below 2
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "time_slicing", replicas = 1 } # <- diagnostic
}
