# Neither node_name nor node_selector.
# expect: validate
# path: node_name
# message: node_name
resource "gpufleet_node_sharing" "this" { # <- diagnostic
  name     = "l4"
  strategy = "none"
}
