# One taint per key and effect.
# expect: validate
# path: taints[1]
# message: duplicate taint
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  taints = [
    { key = "workload", value = "a", effect = "NoSchedule" },
    { key = "workload", value = "b", effect = "NoSchedule" }, # <- diagnostic
  ]
}
