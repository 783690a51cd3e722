# nodes is computed.
# expect: validate
# path: nodes
# message: is set by the provider
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "none"
  nodes     = ["gpu-1"] # <- diagnostic
}
