# A weight is whole.
# expect: validate
# path: weight
# message: whole number
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  weight     = 50.5 # <- diagnostic
}
