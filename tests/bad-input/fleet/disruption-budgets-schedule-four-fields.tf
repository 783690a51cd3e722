# Cron has five fields.
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
        schedule = "0 9 * *" # <- diagnostic
        duration = "8h"
      },
    ]
  }
}
