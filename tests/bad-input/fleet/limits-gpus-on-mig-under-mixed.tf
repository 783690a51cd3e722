# Under the mixed MIG strategy the nodes advertise no nvidia.com/gpu, so a gpus limit never binds.
# expect: plan
# path: limits["gpus"]
# message: the limit never binds
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  gpu_sharing       = { strategy = "mig", mig_layout = "all-1g.10gb", mig_strategy = "mixed" }
  limits            = { gpus = 16 } # <- diagnostic
}
