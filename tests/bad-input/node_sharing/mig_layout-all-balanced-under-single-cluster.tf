# Under the cluster's single MIG strategy the device plugin needs one MIG
# device type per node; all-balanced has three.
# expect: plan
# path: mig_layout
# message: more than one MIG device type present on node
# alone: the check pairs the cluster-wide sharing with the node sharing
resource "gpufleet_gpu_sharing" "cluster" {
  strategy     = "none"
  mig_strategy = "single"
}

resource "gpufleet_node_sharing" "this" {
  name       = "dgx"
  node_name  = "dgx-1"
  strategy   = "mig"
  mig_layout = "all-balanced" # <- diagnostic
  depends_on = [gpufleet_gpu_sharing.cluster]
}
