# The second budget is wrong.
# expect: validate
# path: disruption.budgets[1].nodes
# message: not a node count
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    budgets = [
      { nodes = "10%" },
      { nodes = "ten" }, # <- diagnostic
    ]
  }
}
