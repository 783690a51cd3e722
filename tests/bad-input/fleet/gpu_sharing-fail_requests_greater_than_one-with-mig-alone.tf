# MIG devices are only shared when time-sliced.
# expect: validate
# path: gpu_sharing.fail_requests_greater_than_one
# message: only shared when time-sliced
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  gpu_sharing  = { strategy = "mig", mig_layout = "all-1g.10gb", fail_requests_greater_than_one = true } # <- diagnostic
}
