# Under the single MIG strategy NVIDIA's device plugin refuses MIG devices of several types on a node.
# expect: validate
# path: gpu_sharing.mig_layout
# message: invalid MIG configuration
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  gpu_sharing  = { strategy = "mig", mig_layout = "all-balanced", mig_strategy = "single" } # <- diagnostic
}
