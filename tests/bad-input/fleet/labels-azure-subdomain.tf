# Subdomains of a reserved domain are reserved too.
# expect: validate
# path: labels["node.karpenter.azure.com/sku"]
# message: reserved
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  labels = {
    team                           = "ml"
    "node.karpenter.azure.com/sku" = "x" # <- diagnostic
  }
}
