# The name becomes a ConfigMap key and a label value: lower case.
# expect: validate
# path: name
# message: not a valid
resource "gpufleet_node_sharing" "this" {
  name      = "Inference" # <- diagnostic
  node_name = "gpu-1"
  strategy  = "none"
}
