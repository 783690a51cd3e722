# At most 100%.
# expect: validate
# path: disruption.budgets[0].nodes
# message: not a node count
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    budgets = [
      {
        nodes = "101%" # <- diagnostic
      },
    ]
  }
}
