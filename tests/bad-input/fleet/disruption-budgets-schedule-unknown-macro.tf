# Not a cron macro.
# expect: validate
# path: disruption.budgets[0].schedule
# message: cron
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    budgets = [
      {
        nodes    = "0"
        schedule = "@fortnightly" # <- diagnostic
        duration = "8h"
      },
    ]
  }
}
