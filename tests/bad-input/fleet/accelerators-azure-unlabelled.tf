# The azure label scheme has no name for the L4.
# expect: plan
# path: accelerators
# message: label scheme
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme = "azure"
  accelerators = ["L4"] # <- diagnostic
}
