# An A100-80GB has 80 GiB: no node could match at most 40.
# expect: plan
# path: accelerator_memory_max_gib
# message: contradictory gpu memory
resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme               = "aws"
  accelerators               = ["A100-80GB"]
  accelerator_memory_max_gib = 40 # <- diagnostic
}
