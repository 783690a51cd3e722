# A label value with a slash.
# expect: validate
# path: labels
# message: not a valid label value
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  labels     = { team = "ml/research" } # <- diagnostic
}
