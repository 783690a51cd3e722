# schedule and duration go together.
# expect: validate
# path: disruption.budgets[0].duration
# message: go together
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    budgets = [
      {
        nodes    = "0"
        schedule = "0 9 * * mon-fri" # <- diagnostic
      },
    ]
  }
}
