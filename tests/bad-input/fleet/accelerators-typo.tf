# A near miss gets a suggestion.
# expect: validate
# path: accelerators
# message: did you mean
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H10O"] # <- diagnostic
}
