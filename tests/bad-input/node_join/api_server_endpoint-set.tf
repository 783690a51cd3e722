# api_server_endpoint is computed.
# expect: validate
# path: api_server_endpoint
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  api_server_endpoint = "x" # <- diagnostic
}
