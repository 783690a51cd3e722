# A key prefix must be a DNS subdomain.
# expect: validate
# path: node_pool_annotations
# message: is not a DNS subdomain
resource "gpufleet_fleet" "this" {
  name                  = "gpu"
  node_class            = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  node_pool_annotations = { "Example_Com/owner" = "ml" } # <- diagnostic
}
