# zones generates this requirement: set zones instead.
# expect: plan
# path: requirements[0]
# message: duplicates
# gap: names-attribute: the message says which attribute to set instead, but not `requirements[0]`
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "topology.kubernetes.io/zone", operator = "In", values = ["a"] }, # <- diagnostic
  ]
}
