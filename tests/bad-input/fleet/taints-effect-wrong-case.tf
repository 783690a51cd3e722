# Effects are case-sensitive.
# expect: validate
# path: taints[0].effect
# message: is not one of
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  taints = [
    { key = "workload", effect = "noschedule" }, # <- diagnostic
  ]
}
