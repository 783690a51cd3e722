# Not a disruption reason.
# expect: validate
# path: disruption.budgets[0].reasons
# message: is not one of
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    budgets = [
      {
        nodes   = "1"
        reasons = ["Expired"] # <- diagnostic
      },
    ]
  }
}
