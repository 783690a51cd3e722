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
    condition     = gpufleet_fleet.inference.accelerators == toset(["L4"]) && gpufleet_fleet.inference.limits.gpus == "16"
    error_message = "inference nodes have L4s, 16 GPUs at most"
  }
  assert {
    condition = alltrue([
      for fleet in [gpufleet_fleet.training, gpufleet_fleet.inference, gpufleet_fleet.general[0]] :
      fleet.disruption.consolidation_policy == "WhenEmpty" && fleet.disruption.consolidate_after == "5m"
    ])
    error_message = "Karpenter only removes empty nodes, after 5 minutes"
  }
  assert {
    condition     = jsonencode(gpufleet_fleet.general[0].requirements) == jsonencode([{ key = "cfke.io/accelerator-name", min_values = null, operator = "DoesNotExist", values = null }])
    error_message = "the general fleet must exclude every GPU instance type"
  }
  assert {
    condition     = length(gpufleet_node_taint.training_server) == 0 && length(output.training_servers) == 0
    error_message = "no server is tainted unless named"
  }
}

run "other_clouds_models_and_servers" {
  command = plan
  module {
    source = "./module"
  }
  variables {
    label_scheme         = "aws"
    training_gpu_models  = ["H100", "H200"]
    inference_gpu_models = ["L4", "L40S"]
    training_servers     = ["dgx-01", "dgx-02"]
    training_taint       = { key = "example.com/pool", value = "train" }
    general_fleet_name   = null
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
    label_scheme = "aws"
  }

  assert {
    condition     = gpufleet_fleet.general[0].requirements[0].key == "karpenter.k8s.aws/instance-gpu-name"
    error_message = "the CPU-only fleet excludes GPUs in the scheme's own label"
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
