# cluster_ca_certificate is computed.
# expect: validate
# path: cluster_ca_certificate
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  cluster_ca_certificate = "x" # <- diagnostic
}
