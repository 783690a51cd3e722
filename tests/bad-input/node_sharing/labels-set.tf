# labels is computed: the labels this resource writes.
# expect: validate
# path: labels
# message: is set by the provider
resource "gpufleet_node_sharing" "this" {
  name      = "gpu-1"
  node_name = "gpu-1"
  strategy  = "none"
  labels    = { "nvidia.com/device-plugin.config" = "node-gpu-1" } # <- diagnostic
}
