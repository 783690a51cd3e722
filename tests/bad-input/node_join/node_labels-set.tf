# node_labels is computed.
# expect: validate
# path: node_labels
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  node_labels = { team = "ml" } # <- diagnostic
}
