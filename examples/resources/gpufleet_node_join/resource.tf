# The device-plugin configuration of the data-center H100 servers: key
# node-h100 of the ConfigMap, MPS with four clients per GPU.
resource "gpufleet_node_sharing" "h100" {
  name          = "h100"
  node_selector = { "example.com/pool" = "h100" }
  strategy      = "mps"
  replicas      = 4
}

# A join token for those servers: they register tainted for training and
# labelled with their pool and their GPU-sharing configuration, so nothing
# else lands on them between joining and the next apply.
resource "gpufleet_node_join" "h100" {
  ttl                        = "24h"
  rotate_when_expires_within = "2h"
  taints = [
    { key = "workload", value = "training", effect = "NoSchedule" },
  ]
  labels = { "example.com/pool" = "h100" }
  # The key of gpufleet_node_sharing.h100 above, written before the token:
  # a name nothing writes would leave the device plugin unconfigured.
  sharing_config = gpufleet_node_sharing.h100.config_key

  # What kubeadm init would have set up for node bootstrap: the group's
  # bindings and the cluster-info ConfigMap.
  manage_bootstrap_rbac = true
}

# Give these to each server (they carry the token: keep them secret).
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
