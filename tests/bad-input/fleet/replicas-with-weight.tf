# Karpenter does not weigh static NodePools.
# expect: validate
# path: weight
# message: has no `weight`
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  replicas   = 2
  weight     = 10 # <- diagnostic
}
