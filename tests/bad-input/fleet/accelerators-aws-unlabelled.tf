# The aws label scheme has no name for the GB200.
# expect: plan
# path: accelerators
# message: label scheme
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme = "aws"
  accelerators = ["GB200"] # <- diagnostic
}
