# Weights run 1 to 100.
# expect: validate
# path: weight
# message: outside
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  weight     = 101 # <- diagnostic
}
