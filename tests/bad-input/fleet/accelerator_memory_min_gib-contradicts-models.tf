# An L4 has 24 GiB: no node could match 80.
# expect: plan
# path: accelerator_memory_min_gib
# message: contradictory gpu memory
resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators               = ["L4"]
  accelerator_memory_min_gib = 80 # <- diagnostic
}
