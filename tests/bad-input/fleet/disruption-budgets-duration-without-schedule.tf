# duration and schedule go together.
# expect: validate
# path: disruption.budgets[0].schedule
# message: go together
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    budgets = [
      {
        nodes    = "0"
        duration = "8h" # <- diagnostic
      },
    ]
  }
}
