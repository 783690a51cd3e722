# Not a bool.
# expect: validate
# path: manage_bootstrap_rbac
# message: bool
resource "gpufleet_node_join" "this" {
  manage_bootstrap_rbac = "maybe" # <- diagnostic
}
