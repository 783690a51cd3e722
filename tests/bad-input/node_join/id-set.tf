# id is computed.
# expect: validate
# path: id
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  id = "abcdef" # <- diagnostic
}
