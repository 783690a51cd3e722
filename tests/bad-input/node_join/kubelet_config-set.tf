# kubelet_config is computed.
# expect: validate
# path: kubelet_config
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  kubelet_config = "x" # <- diagnostic
}
