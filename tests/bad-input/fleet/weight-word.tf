# Not a number.
# expect: validate
# path: weight
# message: number is required
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  weight     = "heavy" # <- diagnostic
}
