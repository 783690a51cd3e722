# H200's smallest MIG slice has 18 GB, so there is no all-1g.10gb.
# expect: validate
# path: gpu_sharing.mig_layout
# message: H200 has no layout
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H200"]
  gpu_sharing  = { strategy = "mig", mig_layout = "all-1g.10gb" } # <- diagnostic
}
