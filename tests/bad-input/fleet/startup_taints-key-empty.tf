# An empty taint key.
# expect: validate
# path: startup_taints[0].key
# message: must not be empty
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  startup_taints = [
    { key = "", effect = "NoSchedule" }, # <- diagnostic
  ]
}
