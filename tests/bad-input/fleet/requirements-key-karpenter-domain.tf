# Karpenter's own labels are not requirements.
# expect: validate
# path: requirements[0].key
# message: reserved
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "karpenter.sh/nodepool", operator = "In", values = ["x"] }, # <- diagnostic
  ]
}
