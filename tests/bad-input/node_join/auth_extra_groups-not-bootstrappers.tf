# Extra groups of a bootstrap token are bootstrap groups.
# expect: validate
# path: auth_extra_groups
# message: is not a bootstrap group
resource "gpufleet_node_join" "this" {
  auth_extra_groups = ["system:masters"] # <- diagnostic
}
