# Durations have no days.
# expect: validate
# path: termination_grace_period
# message: a duration such as
resource "gpufleet_fleet" "this" {
  name                     = "gpu"
  node_class               = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  termination_grace_period = "2d" # <- diagnostic
}
