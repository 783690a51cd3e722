# A label value with a space.
# expect: validate
# path: labels
# message: label value
resource "gpufleet_node_join" "this" {
  labels = { team = "machine learning" } # <- diagnostic
}
