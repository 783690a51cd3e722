# The module on its own, with other inputs. Plan only: no cluster is needed.

variables {
  node_class = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "gpu" }
}

run "defaults_are_the_seed" {
  command = plan
  module {
    source = "./module"
  }

  assert {
    condition     = gpufleet_priority_class.inference.value == 100000 && gpufleet_priority_class.inference.preemption_policy == "PreemptLowerPriority"
    error_message = "online-inference is 100000 and preempts"
  }
  assert {
    condition     = gpufleet_priority_class.training.value == 1000 && gpufleet_priority_class.training.preemption_policy == "Never"
    error_message = "batch-training is 1000 and never preempts"
  }
  assert {
    condition = (
      gpufleet_fleet.training.accelerators == toset(["H100"])
      && gpufleet_fleet.training.accelerator_count.min == 8
      && gpufleet_fleet.training.accelerator_count.max == 8
      && gpufleet_fleet.training.limits.gpus == "64"
    )
    error_message = "training nodes have exactly 8 H100s, 64 GPUs at most"
  }
  assert {
    condition     = gpufleet_fleet.inference.capacity_types == toset(["on-demand"])
    error_message = "online inference runs on on-demand nodes, never on reclaimable spot"
  }
  assert {
    condition = (
      gpufleet_fleet.inference.accelerators == toset(["L4"])
      && gpufleet_fleet.inference.accelerator_count.min == 1
      && gpufleet_fleet.inference.accelerator_count.max == 1
    )
    error_message = "inference nodes have one L4"
  }
  assert {
    condition = (
      gpufleet_fleet.inference.gpu_sharing.strategy == "time_slicing"
      && gpufleet_fleet.inference.gpu_sharing.replicas == 4
      && gpufleet_fleet.inference.gpus_per_node_advertised == 4
      && output.inference.gpus_per_node_advertised == 4
      && output.inference.gpu_resource == "nvidia.com/gpu"
    )
    error_message = "each inference GPU is time-sliced for 4 pods, which ask for nvidia.com/gpu"
  }
  assert {
    condition     = gpufleet_fleet.inference.limits.gpus == "64"
    error_message = "16 L4s at most: Karpenter counts each as the 4 nvidia.com/gpu it advertises"
  }
  assert {
    condition     = jsonencode(keys(gpufleet_fleet.inference.node_overlays)) == jsonencode(["inference-1-gpus"]) && gpufleet_fleet.inference.node_overlays["inference-1-gpus"].capacity["nvidia.com/gpu"] == "4"
    error_message = "Karpenter plans an inference node with the 4 nvidia.com/gpu it advertises"
  }
  assert {
    condition     = gpufleet_fleet.training.gpu_sharing == null && output.training.gpu_resource == "nvidia.com/gpu" && gpufleet_fleet.training.gpus_per_node_advertised == 8
    error_message = "training keeps whole GPUs"
  }
  assert {
    condition = alltrue([
      for fleet in [gpufleet_fleet.training, gpufleet_fleet.inference, gpufleet_fleet.general[0]] :
      fleet.disruption.consolidation_policy == "WhenEmpty" && fleet.disruption.consolidate_after == "5m"
    ])
    error_message = "Karpenter only removes empty nodes, after 5 minutes"
  }
  assert {
    condition     = jsonencode(gpufleet_fleet.general[0].requirements) == jsonencode([{ key = "karpenter.k8s.aws/instance-gpu-name", min_values = null, operator = "DoesNotExist", values = null }])
    error_message = "the general fleet must exclude every GPU instance type, by the EC2NodeClass's GPU label"
  }
  assert {
    condition     = length(gpufleet_node_taint.training_server) == 0 && length(output.training_servers) == 0
    error_message = "no server is tainted unless named"
  }
  assert {
    condition     = length(gpufleet_node_join.training_server) == 0 && nonsensitive(output.training_server_join) == null
    error_message = "no join token unless asked for"
  }
}

run "other_clouds_models_and_servers" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    label_scheme          = "aws"
    training_gpu_models   = ["H100", "H200"]
    inference_gpu_models  = ["L4", "L40S"]
    training_servers      = ["dgx-01", "dgx-02"]
    join_training_servers = true
    training_taint        = { key = "example.com/pool", value = "train" }
    general_fleet_name    = null
  }

  assert {
    condition     = output.general == null && length(gpufleet_fleet.general) == 0
    error_message = "general_fleet_name = null means no CPU fleet"
  }
  assert {
    condition     = jsonencode(output.training_servers) == jsonencode(["dgx-01", "dgx-02"])
    error_message = "every named server gets the training taint"
  }
  assert {
    condition = alltrue([
      for t in gpufleet_node_taint.training_server : jsonencode(t.taints) == jsonencode([{ effect = "NoSchedule", key = "example.com/pool", value = "train" }])
    ])
    error_message = "servers carry the same taint as the training fleet"
  }
  assert {
    condition     = jsonencode(gpufleet_node_join.training_server[0].taints) == jsonencode([{ effect = "NoSchedule", key = "example.com/pool", value = "train" }]) && gpufleet_node_join.training_server[0].manage_bootstrap_rbac
    error_message = "joining servers register with the training fleet's taint, and the token gets what node bootstrap needs"
  }
  assert {
    condition     = jsonencode(output.training.tolerations) == jsonencode([{ effect = "NoSchedule", key = "example.com/pool", operator = "Equal", value = "train" }])
    error_message = "training tolerations follow the training taint"
  }
  assert {
    condition     = gpufleet_fleet.training.label_scheme == "aws" && gpufleet_fleet.inference.accelerators == toset(["L4", "L40S"])
    error_message = "models and label scheme reach the fleets"
  }
}

run "aws_general_fleet_excludes_aws_gpu_label" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    label_scheme                        = "aws"
    training_network_bandwidth_min_gbps = 3200
  }

  assert {
    condition     = gpufleet_fleet.training.network_bandwidth_min_gbps == 3200
    error_message = "the training fleet asks for the network bandwidth it is given"
  }
  assert {
    condition     = gpufleet_fleet.general[0].requirements[0].key == "karpenter.k8s.aws/instance-gpu-name"
    error_message = "the CPU-only fleet excludes GPUs in the scheme's own label"
  }
  assert {
    condition     = output.training.gpu_count_label == "karpenter.k8s.aws/instance-gpu-count"
    error_message = "workloads select a GPU count in the scheme's own label"
  }
  # AWS's P5 page: p5.48xlarge, the EC2 type with 8 H100, has 32 EFA interfaces.
  assert {
    condition     = jsonencode(output.training.interconnect_resources) == jsonencode({ "vpc.amazonaws.com/efa" = "32" })
    error_message = "training pods on 8xH100 nodes request the 32 EFA interfaces of p5.48xlarge"
  }
}

run "ec2_node_class_means_aws" {
  command = plan
  module {
    source = "./module"
  }

  assert {
    condition = (
      gpufleet_fleet.training.label_scheme == "aws"
      && output.training.gpu_count_label == "karpenter.k8s.aws/instance-gpu-count"
      && output.training.interconnect_resources == tomap({ "vpc.amazonaws.com/efa" = "32" })
    )
    error_message = "an EC2NodeClass's fleets use EC2's labels, and 8xH100 training pods request p5's 32 EFA interfaces"
  }
}

run "cfke_names_no_interconnect" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  }

  assert {
    condition     = output.training.interconnect_resources == null && output.training.gpu_count_label == "cfke.io/accelerator-count"
    error_message = "under the cfke scheme training pods request no interconnect resource"
  }
  assert {
    condition     = output.spot_training == null && length(gpufleet_fleet.spot_training) == 0
    error_message = "no spot training fleet unless asked for"
  }
}

run "spot_training" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    spot_training = { gpu_models = ["A100-40GB", "A100-80GB"], gpus_per_node = 8, gpu_limit = 16 }
  }

  assert {
    condition = (
      gpufleet_fleet.spot_training[0].name == "training-spot"
      && gpufleet_fleet.spot_training[0].capacity_types == toset(["spot"])
      && gpufleet_fleet.spot_training[0].accelerators == toset(["A100-40GB", "A100-80GB"])
      && gpufleet_fleet.spot_training[0].accelerator_count.min == 8
      && gpufleet_fleet.spot_training[0].limits.gpus == "16"
    )
    error_message = "the spot training fleet has 8 of the A100s per node, on spot, 16 GPUs at most"
  }
  assert {
    condition = (
      jsonencode(output.spot_training.node_selector) == jsonencode({ "karpenter.sh/nodepool" = "training-spot" })
      && jsonencode(output.spot_training.tolerations) == jsonencode(output.training.tolerations)
      && output.spot_training.priority_class_name == "batch-training"
      && output.spot_training.gpus_per_node == 8
    )
    error_message = "spot training jobs select the spot fleet, under the training taint and priority"
  }
}

run "inference_must_outrank_training" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    inference_priority = { name = "online-inference", value = 500 }
  }
  expect_failures = [gpufleet_priority_class.inference]
}

run "limit_below_one_training_node" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    training_gpu_limit = 4
  }
  expect_failures = [gpufleet_fleet.training]
}

run "priority_out_of_range" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    inference_priority = { name = "online-inference", value = 2000000000 }
  }
  expect_failures = [var.inference_priority]
}

run "dedicated_inference" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    inference_sharing = null
  }

  assert {
    condition = (
      gpufleet_fleet.inference.gpu_sharing.strategy == "none"
      && gpufleet_fleet.inference.gpus_per_node_advertised == 1
      && length(gpufleet_fleet.inference.node_overlays) == 0
      && gpufleet_fleet.inference.limits.gpus == "16"
    )
    error_message = "null keeps inference GPUs dedicated: one pod per L4, 16 L4s at most"
  }
}

run "mps_on_two_gpu_nodes" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    inference_sharing       = { strategy = "mps", replicas = 2 }
    inference_gpus_per_node = 2
    inference_gpu_limit     = 8
  }

  assert {
    condition = (
      gpufleet_fleet.inference.gpu_sharing.strategy == "mps"
      && output.inference.gpus_per_node_advertised == 4
      && gpufleet_fleet.inference.limits.gpus == "16"
      && jsonencode(keys(gpufleet_fleet.inference.node_overlays)) == jsonencode(["inference-2-gpus"])
    )
    error_message = "MPS x2 on 2-GPU nodes advertises 4 per node; 8 GPUs are 16 shares"
  }
}

run "sharing_without_replicas" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    inference_sharing = { strategy = "time_slicing" }
  }
  expect_failures = [var.inference_sharing]
}

run "mig_needs_a_layout" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    inference_sharing = { strategy = "mig", replicas = 2 }
  }
  expect_failures = [var.inference_sharing]
}

run "mig_on_h100_nodes" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    inference_gpu_models    = ["H100"]
    inference_gpus_per_node = 8
    inference_sharing       = { strategy = "mig", mig_layout = "all-1g.10gb" }
    mig_strategy            = "mixed"
  }

  assert {
    condition = (
      gpufleet_fleet.inference.gpu_sharing.mig_layout == "all-1g.10gb"
      && gpufleet_fleet.inference.gpu_sharing.mig_strategy == "mixed"
      && output.inference.gpu_resource == "nvidia.com/mig-1g.10gb"
      && output.inference.gpus_per_node_advertised == 56
      && gpufleet_fleet.inference.limits == tomap({ nodes = "2" })
    )
    error_message = "all-1g.10gb on 8-GPU H100 nodes advertises 56 nvidia.com/mig-1g.10gb per node under the mixed strategy the cluster-wide sharing sets; 16 GPUs are 2 nodes"
  }
}

run "mig_under_the_single_strategy" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    inference_gpu_models    = ["H100"]
    inference_gpus_per_node = 8
    inference_sharing       = { strategy = "mig", mig_layout = "all-1g.10gb" }
    mig_strategy            = "single"
  }

  assert {
    condition = (
      gpufleet_gpu_sharing.cluster.mig_strategy == "single"
      && output.inference.gpu_resource == "nvidia.com/gpu"
      && output.inference.gpus_per_node_advertised == 56
    )
    error_message = "under the single strategy (the GPU Operator's Helm default) each of the 56 MIG devices of an all-1g.10gb H100 node is an nvidia.com/gpu"
  }
}

run "namespace_fences" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    training_namespaces  = ["training"]
    inference_namespaces = ["inference"]
    spot_training        = { gpu_models = ["A100-40GB", "A100-80GB"], gpus_per_node = 8, gpu_limit = 16 }
  }

  assert {
    condition = (
      gpufleet_fleet.training.allowed_namespaces == toset(["training", "inference"])
      && gpufleet_fleet.spot_training[0].allowed_namespaces == toset(["training", "inference"])
      && gpufleet_fleet.training.admission_policy == "gpufleet-fleet-training"
    )
    error_message = "training fleets admit training and inference's overflow, no one else"
  }
  assert {
    condition     = gpufleet_fleet.inference.allowed_namespaces == toset(["inference"]) && gpufleet_fleet.general[0].allowed_namespaces == null
    error_message = "the inference fleet admits inference alone; the CPU-only fleet anyone"
  }
  assert {
    condition = (
      gpufleet_priority_class.inference.allowed_namespaces == toset(["inference"])
      && gpufleet_priority_class.training.allowed_namespaces == toset(["training"])
      && gpufleet_priority_class.inference.admission_policy == "gpufleet-class-online-inference"
    )
    error_message = "only inference may preempt with online-inference"
  }
}

run "no_fence_by_default" {
  command = plan
  module {
    source = "./module"
  }

  assert {
    condition     = gpufleet_fleet.training.allowed_namespaces == null && gpufleet_fleet.training.admission_policy == null && gpufleet_priority_class.inference.allowed_namespaces == null
    error_message = "without namespaces, nothing is fenced"
  }
}

# Teams queue for the training fleet: a queue each, in one cohort, their
# namespaces admitted to the fleet, which Kueue gets as a flavor.
run "training_teams_get_queues_in_one_cohort" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    training_namespaces = ["training"]
    training_teams      = { team-a = 32, team-b = 32 }
  }

  assert {
    condition = (
      gpufleet_fleet.training.kueue_flavor
      && gpufleet_fleet.training.allowed_namespaces == toset(["team-a", "team-b", "training"])
    )
    error_message = "the training fleet is a Kueue flavor that admits the teams' namespaces"
  }
  assert {
    condition = alltrue([
      for team in ["team-a", "team-b"] :
      gpufleet_queue.team[team].namespaces == toset([team])
      && gpufleet_queue.team[team].cohort == "training"
      && gpufleet_queue.team[team].quotas[0].fleet == "training"
      && gpufleet_queue.team[team].quotas[0].gpus == 32
      && gpufleet_queue.team[team].preemption.reclaim_within_cohort == "Any"
    ])
    error_message = "each team has a queue of 32 training GPUs in cohort training, reclaiming what it lends"
  }
}

run "no_teams_no_queues" {
  command = plan
  module {
    source = "./module"
  }

  assert {
    condition     = length(gpufleet_queue.team) == 0 && !gpufleet_fleet.training.kueue_flavor
    error_message = "without training_teams, no queue and no flavor"
  }
}

# Kueue would admit jobs Karpenter may not launch nodes for.
run "teams_beyond_the_training_limit" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    training_teams = { team-a = 32, team-b = 40 }
  }
  expect_failures = [gpufleet_queue.team]
}
