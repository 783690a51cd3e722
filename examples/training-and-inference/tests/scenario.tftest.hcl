# The root configuration: the seed scenario's numbers reach the workloads.
# Plan only: no cluster is needed (the provider plans new resources offline).

run "seed_scenario" {
  command = plan

  assert {
    condition     = jsonencode(output.workloads.training.node_selector) == jsonencode({ "karpenter.sh/nodepool" = "training" })
    error_message = "training pods must select the training fleet"
  }
  assert {
    condition = jsonencode(output.workloads.training.tolerations) == jsonencode([
      { key = "workload", operator = "Equal", value = "training", effect = "NoSchedule" },
    ])
    error_message = "training pods must tolerate exactly the training taint"
  }
  assert {
    condition     = output.workloads.training.priority_class_name == "batch-training" && output.workloads.training.gpus_per_node == 8
    error_message = "training runs as batch-training with 8 GPUs per pod"
  }
  assert {
    condition     = jsonencode(output.workloads.inference.node_selector) == jsonencode({ "karpenter.sh/nodepool" = "inference" })
    error_message = "inference pods must select the inference fleet"
  }
  assert {
    condition = jsonencode(output.workloads.inference.tolerations) == jsonencode([
      { key = "workload", operator = "Equal", value = "inference", effect = "NoSchedule" },
    ])
    error_message = "inference pods must tolerate exactly the inference taint"
  }
  assert {
    condition     = output.workloads.inference.priority_class_name == "online-inference"
    error_message = "inference runs as online-inference"
  }
  assert {
    condition     = output.workloads.inference.gpu_resource == "nvidia.com/gpu" && output.workloads.training.gpu_resource == "nvidia.com/gpu"
    error_message = "GPUs are requested as nvidia.com/gpu (time slicing without renaming keeps the name)"
  }
  assert {
    condition     = output.workloads.inference.gpus_per_node_advertised == 4 && output.workloads.inference.sharing.strategy == "time_slicing"
    error_message = "each inference node's L4 is time-sliced for 4 pods"
  }
  assert {
    condition = (
      output.workloads.inference_overflow.node_selector == output.workloads.training.node_selector
      && length(output.workloads.inference_overflow.tolerations) == 2
      && output.workloads.inference_overflow.priority_class_name == "online-inference"
    )
    error_message = "overflow inference lands on the training fleet, tolerating both taints, at inference priority"
  }
  assert {
    condition     = jsonencode(output.workloads.general.node_selector) == jsonencode({ "karpenter.sh/nodepool" = "general" })
    error_message = "the CPU-only fleet is named general"
  }
  assert {
    condition     = jsonencode(output.training_servers) == jsonencode(["simulated-8xh100-server"])
    error_message = "the self-managed server is reserved for training"
  }
  assert {
    condition     = strcontains(nonsensitive(output.training_server_join.kubelet_config), "registerWithTaints")
    error_message = "the self-managed server joins with the training taint"
  }
}

# The teams of `make demo`: a queue each on the training fleet, whose jobs
# carry nothing but the queue's label.
run "training_teams_queue_for_the_training_fleet" {
  command = plan

  variables {
    training_teams = { team-a = 32, team-b = 32 }
  }

  assert {
    condition = jsonencode(output.workloads.training_queues) == jsonencode({
      team-a = { labels = { "kueue.x-k8s.io/queue-name" = "team-a" }, gpus = 32 }
      team-b = { labels = { "kueue.x-k8s.io/queue-name" = "team-b" }, gpus = 32 }
    })
    error_message = "each team's jobs carry only its queue's label"
  }
  assert {
    condition     = sum([for q in output.workloads.training_queues : q.gpus]) == output.workloads.training.gpu_limit
    error_message = "the two queues share the training fleet's 64 GPUs"
  }
}
