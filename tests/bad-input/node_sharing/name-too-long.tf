# At most 63 characters.
# expect: validate
# path: name
# message: at most 63
resource "gpufleet_node_sharing" "this" {
  name      = "inference-on-the-self-managed-servers-in-the-basement-rack-number-7" # <- diagnostic
  node_name = "gpu-1"
  strategy  = "none"
}
