# MIG depends on the model, and the fleet names none.
# expect: validate
# path: gpu_sharing.strategy
# message: sets no `accelerators`
resource "gpufleet_fleet" "this" {
  name        = "gpu"
  node_class  = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  gpu_sharing = { strategy = "mig", mig_layout = "all-1g.10gb" } # <- diagnostic
}
