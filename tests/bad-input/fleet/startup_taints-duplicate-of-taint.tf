# One taint per key and effect across taints and startup_taints.
# expect: validate
# path: startup_taints[0]
# message: duplicate taint
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  taints     = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  startup_taints = [
    { key = "workload", effect = "NoSchedule" }, # <- diagnostic
  ]
}
