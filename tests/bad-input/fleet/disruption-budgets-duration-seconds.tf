# Budget durations are hours and minutes.
# expect: validate
# path: disruption.budgets[0].duration
# message: hours and minutes
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    budgets = [
      {
        nodes    = "0"
        schedule = "@daily"
        duration = "30s" # <- diagnostic
      },
    ]
  }
}
