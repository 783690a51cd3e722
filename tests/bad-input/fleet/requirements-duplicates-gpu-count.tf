# accelerator_count generates this requirement with the cfke scheme.
# expect: plan
# path: requirements[0]
# message: duplicates
# gap: names-attribute: the message says which attribute to set instead, but not `requirements[0]`
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "cfke.io/accelerator-count", operator = "Gte", values = ["8"] }, # <- diagnostic
  ]
}
