# A token id is six lower-case letters or digits.
# expect: validate
# path: token_id
# message: [a-z0-9]{6}
resource "gpufleet_node_join" "this" {
  token_id = "ABC123" # <- diagnostic
}
