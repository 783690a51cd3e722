# A quantity has no space before its suffix.
# expect: validate
# path: limits.memory
# message: not a kubernetes quantity
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  limits = {
    memory = "4000 Gi" # <- diagnostic
  }
}
