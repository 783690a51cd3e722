# A join token for the data-center H100 servers: they register tainted for
# training and labelled with their GPU-sharing configuration, so nothing else
# lands on them between joining and the next apply.
resource "gpufleet_node_join" "h100" {
  ttl                        = "24h"
  rotate_when_expires_within = "2h"
  taints = [
    { key = "nvidia.com/gpu", value = "training", effect = "NoSchedule" },
  ]
  labels = { "example.com/pool" = "h100" }
  # The key of gpufleet_node_sharing.h100 below, written before the token:
  # a name nothing writes would leave the device plugin unconfigured.
  sharing_config = gpufleet_node_sharing.h100.config_key

  # What kubeadm init would have set up for node bootstrap: the group's
  # bindings and the cluster-info ConfigMap.
  manage_bootstrap_rbac = true
}

# The servers' device-plugin configuration, key `node-h100`: whole GPUs for
# training. It also labels the pool's nodes that joined before.
resource "gpufleet_node_sharing" "h100" {
  name          = "h100"
  node_selector = { "example.com/pool" = "h100" }
  strategy      = "none"
}

# Give these to the server (they carry the token: keep them secret).
output "kubeadm_join_command" {
  value     = gpufleet_node_join.h100.kubeadm_join_command
  sensitive = true
}

output "kubelet_config" {
  value = gpufleet_node_join.h100.kubelet_config
}

output "kubelet_node_labels_flag" {
  value = gpufleet_node_join.h100.kubelet_node_labels_flag
}
