# kubelet_node_labels_flag is computed.
# expect: validate
# path: kubelet_node_labels_flag
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  kubelet_node_labels_flag = "x" # <- diagnostic
}
