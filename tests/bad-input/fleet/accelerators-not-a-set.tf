# A string where a set belongs.
# expect: validate
# path: accelerators
# message: set of string required
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = { model = "H100" } # <- diagnostic
}
