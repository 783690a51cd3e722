# A100 comes in two memory sizes.
# expect: validate
# path: accelerators
# message: ambiguous
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["A100"] # <- diagnostic
}
