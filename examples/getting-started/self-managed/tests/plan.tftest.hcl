# What docs/guides/getting-started-self-managed.md says of this
# configuration, as the plan shows it. Plan only: no cluster is needed.

run "servers_join_tainted_and_labelled" {
  command = plan

  # Their node_labels also carry nvidia.com/device-plugin.config, the
  # config_key of gpufleet_node_sharing.l4_inference, known once that is
  # applied (tests/acceptance/prerequisites.rs applies such a reference).
  assert {
    condition     = gpufleet_node_join.inference.labels == tomap({ "example.com/pool" = "l4-inference" })
    error_message = "new inference servers register in their pool"
  }
  assert {
    condition     = strcontains(gpufleet_node_join.inference.kubelet_config, "value: inference") && strcontains(gpufleet_node_join.training.kubelet_config, "value: training")
    error_message = "each token's servers register with their workload taint"
  }
  assert {
    condition     = gpufleet_node_join.training.node_labels == tomap({ "example.com/pool" = "h100-training" })
    error_message = "training servers keep the cluster-wide default: no sharing label"
  }
  assert {
    condition     = alltrue([for join in [gpufleet_node_join.inference, gpufleet_node_join.training] : join.manage_bootstrap_rbac && join.usages == toset(["authentication", "signing"])])
    error_message = "the tokens both authenticate (TLS bootstrap) and sign cluster-info (kubeadm join's discovery)"
  }
}

run "existing_servers_get_the_same_taints" {
  command = plan

  assert {
    condition     = gpufleet_node_taint.inference.taints[0].value == "inference" && gpufleet_node_taint.training.taints[0].value == "training"
    error_message = "servers already in the cluster get the taints new ones register with"
  }
  assert {
    condition     = gpufleet_node_sharing.l4_inference.strategy == "time_slicing" && gpufleet_node_sharing.l4_inference.replicas == 4
    error_message = "the inference pool's L4s are time-sliced for 4 pods each"
  }
}
