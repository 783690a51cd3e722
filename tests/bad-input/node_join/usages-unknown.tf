# Bootstrap tokens know two usages.
# expect: validate
# path: usages
# message: is not one of
resource "gpufleet_node_join" "this" {
  usages = ["authentication", "admin"] # <- diagnostic
}
