# A kubelet may not give itself a node-role label.
# expect: validate
# path: labels
# message: --node-labels
resource "gpufleet_node_join" "this" {
  labels = { "node-role.kubernetes.io/gpu" = "" } # <- diagnostic
}
