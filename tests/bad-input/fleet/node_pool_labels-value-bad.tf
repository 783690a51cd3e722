# Label values have no spaces.
# expect: validate
# path: node_pool_labels
# message: not a valid label value
resource "gpufleet_fleet" "this" {
  name             = "gpu"
  node_class       = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  node_pool_labels = { team = "machine learning" } # <- diagnostic
}
