# The same pair told by the cluster-wide sharing, when it is planned second.
# expect: plan
# path: mig_strategy
# message: using --mig-strategy=mixed is not supported with MPS
# alone: the check pairs the cluster-wide sharing with the fleet
resource "gpufleet_fleet" "chat" {
  name         = "chat"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "mps", replicas = 4 }
}

resource "gpufleet_gpu_sharing" "this" {
  strategy     = "none"
  mig_strategy = "mixed" # <- diagnostic
  depends_on   = [gpufleet_fleet.chat]
}
