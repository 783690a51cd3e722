# The sharing key becomes a label value: no slash.
# expect: validate
# path: sharing_config
# message: not a valid label value
resource "gpufleet_node_join" "this" {
  sharing_config = "h100/mps" # <- diagnostic
}
