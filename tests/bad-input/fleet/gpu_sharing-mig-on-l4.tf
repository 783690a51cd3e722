# L4 has no MIG.
# expect: validate
# path: gpu_sharing.strategy
# message: L4 has no MIG
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "mig", mig_layout = "all-1g.10gb" } # <- diagnostic
}
