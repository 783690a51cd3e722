# A DNS-1123 label has no dots.
# expect: validate
# path: name
# message: not a valid
resource "gpufleet_node_sharing" "this" {
  name      = "inference.l4" # <- diagnostic
  node_name = "gpu-1"
  strategy  = "none"
}
