# kubeadm_join_command is computed.
# expect: validate
# path: kubeadm_join_command
# message: is set by the provider
resource "gpufleet_node_join" "this" {
  kubeadm_join_command = "x" # <- diagnostic
}
