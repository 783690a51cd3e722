# A token secret is sixteen lower-case letters or digits.
# expect: validate
# path: token_secret
# message: [a-z0-9]{16}
resource "gpufleet_node_join" "this" {
  token_secret = "tooshort" # <- diagnostic
}
