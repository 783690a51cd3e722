# Keeps general workloads off GPU nodes and reserves one node for inference,
# without touching the taints kubelet, Karpenter or other tools put on them.

# Every node labelled as a GPU node at apply time; nodes that join later show
# up in the next plan.
resource "gpufleet_node_taint" "gpu_nodes" {
  node_selector = {
    "nvidia.com/gpu.present" = "true"
  }
  taints = [
    { key = "nvidia.com/gpu", value = "present", effect = "NoSchedule" },
  ]
}

# One node for inference only: new pods need a toleration, and running pods
# without one are evicted. The same key may carry several effects.
resource "gpufleet_node_taint" "inference" {
  node_name = "gpu-node-7"
  taints = [
    { key = "workload", value = "inference", effect = "NoSchedule" },
    { key = "workload", value = "inference", effect = "NoExecute" },
  ]
}

output "gpu_nodes" {
  value = gpufleet_node_taint.gpu_nodes.nodes
}
