# expiration is computed.
# expect: validate
# path: expiration
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  expiration = "x" # <- diagnostic
}
