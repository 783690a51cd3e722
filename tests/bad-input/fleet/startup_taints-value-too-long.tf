# A taint value holds at most 63 characters.
# expect: validate
# path: startup_taints[0].value
# message: not a valid taint value
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  startup_taints = [
    { key = "workload", value = "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv", effect = "NoSchedule" }, # <- diagnostic
  ]
}
