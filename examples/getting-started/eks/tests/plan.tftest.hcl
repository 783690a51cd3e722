# What docs/guides/getting-started-eks.md says of this configuration, as the
# plan shows it. Plan only: no cluster is needed.

run "fleets_use_ec2s_labels" {
  command = plan

  assert {
    condition = alltrue([
      for fleet in [gpufleet_fleet.training, gpufleet_fleet.inference_l4, gpufleet_fleet.inference_mig] :
      fleet.label_scheme == "aws"
    ])
    error_message = "an EC2NodeClass's fleets are written in EC2's labels (label_scheme = aws)"
  }
  assert {
    condition     = contains([for r in gpufleet_fleet.training.node_pool_requirements : r.key if r.operator == "In" && r.values == tolist(["h100"])], "karpenter.k8s.aws/instance-gpu-name")
    error_message = "the training fleet requires EC2's H100 label value, h100"
  }
  assert {
    condition     = contains([for r in gpufleet_fleet.inference_l4.node_pool_requirements : r.key if r.operator == "In" && r.values == tolist(["l4"])], "karpenter.k8s.aws/instance-gpu-name")
    error_message = "the L4 fleet requires EC2's L4 label value, l4"
  }
}

run "training_keeps_whole_gpus" {
  command = plan

  assert {
    condition = (
      gpufleet_fleet.training.gpu_sharing == null
      && gpufleet_fleet.training.gpu_resource == "nvidia.com/gpu"
      && gpufleet_fleet.training.gpus_per_node_advertised == 8
      && gpufleet_fleet.training.limits.gpus == "64"
    )
    error_message = "training nodes advertise their 8 H100s; 64 GPUs at most"
  }
  assert {
    condition     = gpufleet_priority_class.training.preemption_policy == "Never" && gpufleet_priority_class.inference.value > gpufleet_priority_class.training.value
    error_message = "training never preempts; inference ranks above it"
  }
}

run "inference_shares" {
  command = plan

  assert {
    condition = (
      gpufleet_fleet.inference_l4.gpu_resource == "nvidia.com/gpu"
      && gpufleet_fleet.inference_l4.gpus_per_node_advertised == 4
      && gpufleet_fleet.inference_l4.node_overlays["inference-l4-1-gpus"].capacity["nvidia.com/gpu"] == "4"
    )
    error_message = "an L4 node advertises 4 nvidia.com/gpu, and Karpenter plans it so"
  }
  assert {
    condition = (
      gpufleet_fleet.inference_mig.gpu_sharing.mig_strategy == "mixed"
      && gpufleet_fleet.inference_mig.gpu_resource == "nvidia.com/mig-1g.10gb"
      && gpufleet_fleet.inference_mig.gpus_per_node_advertised == 56
      && gpufleet_fleet.inference_mig.limits == tomap({ nodes = "2" })
    )
    error_message = "an H100 MIG node advertises 56 nvidia.com/mig-1g.10gb under mixed; the fleet is capped by nodes"
  }
}

run "dgx_servers_join_tainted" {
  command = plan

  assert {
    condition     = strcontains(gpufleet_node_join.dgx.kubelet_config, "key: workload") && strcontains(gpufleet_node_join.dgx.kubelet_config, "value: training")
    error_message = "the DGX servers register with the taint workload=training:NoSchedule"
  }
  # The servers' node_labels also carry nvidia.com/device-plugin.config,
  # the config_key of gpufleet_node_sharing.dgx, known once that is applied
  # (tests/acceptance/prerequisites.rs applies such a reference).
  assert {
    condition     = gpufleet_node_join.dgx.labels == tomap({ "example.com/pool" = "dgx-h100" })
    error_message = "the DGX servers register labelled with their pool"
  }
}
