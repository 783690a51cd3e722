# The GPU Operator gives every node's device plugin the cluster's mixed MIG
# strategy, and the plugin refuses to start with MPS under it.
# expect: plan
# path: gpu_sharing.strategy
# message: using --mig-strategy=mixed is not supported with MPS
# alone: the check pairs the cluster-wide sharing with the fleet
resource "gpufleet_gpu_sharing" "cluster" {
  strategy     = "none"
  mig_strategy = "mixed"
}

resource "gpufleet_fleet" "this" {
  name         = "chat"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "mps", replicas = 4 } # <- diagnostic
  # Planned after the cluster-wide sharing, so the fleet is the one that tells.
  depends_on = [gpufleet_gpu_sharing.cluster]
}
