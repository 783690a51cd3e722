# MPS needs Volta or newer; P100 is Pascal.
# expect: validate
# path: gpu_sharing.strategy
# message: MPS needs Volta
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["P100"]
  gpu_sharing  = { strategy = "mps", replicas = 4 } # <- diagnostic
}
