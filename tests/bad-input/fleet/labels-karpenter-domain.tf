# Karpenter sets karpenter.sh labels itself.
# expect: validate
# path: labels["karpenter.sh/nodepool"]
# message: reserved
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  labels = {
    team                    = "ml"
    "karpenter.sh/nodepool" = "other" # <- diagnostic
  }
}
