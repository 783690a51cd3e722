# No taints to own.
# expect: validate
# path: taints
# message: no taints
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints    = [] # <- diagnostic
}
