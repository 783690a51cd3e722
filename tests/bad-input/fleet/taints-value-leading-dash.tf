# A taint value must start with a letter or digit.
# expect: validate
# path: taints[0].value
# message: not a valid taint value
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  taints = [
    { key = "workload", value = "-training", effect = "NoSchedule" }, # <- diagnostic
  ]
}
