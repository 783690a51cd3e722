# A word where a number belongs.
# expect: validate
# path: accelerator_count
# message: number is required
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = { min = "eight" } # <- diagnostic
}
