# node_selector is computed: the fleet says where its nodes are.
# expect: validate
# path: node_selector
# message: node_selector
# gap: caught: computed-only attributes set in configuration are not rejected
resource "gpufleet_fleet" "this" {
  name          = "gpu"
  node_class    = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  node_selector = { pool = "gpu" } # <- diagnostic
}
