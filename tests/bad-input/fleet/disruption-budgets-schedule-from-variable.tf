# A bad schedule known only at plan.
# expect: plan
# path: disruption.budgets[0].schedule
# message: cron
variable "schedule" {
  default = "every day at nine"
}

resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = {
    budgets = [
      {
        nodes    = "0"
        schedule = var.schedule # <- diagnostic
        duration = "8h"
      },
    ]
  }
}
