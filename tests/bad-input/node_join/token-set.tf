# token is computed.
# expect: validate
# path: token
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  token = "x" # <- diagnostic
}
