# A taint key with a space.
# expect: validate
# path: startup_taints[0].key
# message: not a valid key
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  startup_taints = [
    { key = "gpu type", effect = "NoSchedule" }, # <- diagnostic
  ]
}
