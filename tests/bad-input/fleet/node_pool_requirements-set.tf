# node_pool_requirements is what the provider generates from the attributes.
# expect: validate
# path: node_pool_requirements
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name                   = "gpu"
  node_class             = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  node_pool_requirements = [] # <- diagnostic
}
