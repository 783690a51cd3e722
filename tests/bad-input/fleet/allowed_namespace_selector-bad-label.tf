# A selector is of namespace labels: a slash has no place in a label value.
# expect: validate
# path: allowed_namespace_selector
# message: not a valid label value
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  allowed_namespace_selector = { team = "ml/training" } # <- diagnostic
}
