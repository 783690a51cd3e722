# Nine taints: the flavor would carry nine tolerations, and Kueue takes eight.
# expect: validate
# path: kueue_flavor
# message: at most 8 tolerations
resource "gpufleet_fleet" "this" {
  name         = "training"
  accelerators = ["H100"]
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  taints = [
    { key = "t1", effect = "NoSchedule" }, { key = "t2", effect = "NoSchedule" },
    { key = "t3", effect = "NoSchedule" }, { key = "t4", effect = "NoSchedule" },
    { key = "t5", effect = "NoSchedule" }, { key = "t6", effect = "NoSchedule" },
    { key = "t7", effect = "NoSchedule" }, { key = "t8", effect = "NoSchedule" },
    { key = "t9", effect = "NoSchedule" },
  ]
  kueue_flavor = true # <- diagnostic
}
