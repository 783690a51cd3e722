# ca_cert_hash is computed.
# expect: validate
# path: ca_cert_hash
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  ca_cert_hash = "x" # <- diagnostic
}
