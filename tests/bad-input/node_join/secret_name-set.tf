# secret_name is computed.
# expect: validate
# path: secret_name
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  secret_name = "x" # <- diagnostic
}
