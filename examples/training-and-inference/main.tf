# The whole scenario on one cluster: PriorityClasses online-inference
# (100000, preempts) and batch-training (1000, never preempts); a training
# fleet of 8xH100 nodes tainted workload=training:NoSchedule and capped at
# 64 GPUs; an inference fleet of 1-GPU L4 nodes tainted
# workload=inference:NoSchedule, each GPU time-sliced for 4 pods;
# a CPU-only fleet for everything else; and a join token with which a
# self-managed GPU server joins as a training node, tainted from the moment
# it registers. Only training's and inference's namespaces may use the fleets
# and classes: the training fleets admit both (inference overflows onto them),
# the inference fleet and class inference's, the training class training's.
# With training_teams, teams share the training fleet through Kueue: a queue
# per team (`make demo`: two of 32 GPUs) in one cohort, their namespaces
# admitted to the training fleet, which becomes a Kueue flavor.
# `make demo` applies it to the local control plane, where
# Karpenter's kwok provider stands in for the cloud; on EC2's instance types
# the test applies it with label_scheme = "aws" and a spot training fleet.

terraform {
  required_version = ">= 1.6"
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}

# Reads KUBECONFIG (make demo points it at target/cluster/kubeconfig).
provider "gpufleet" {}

variable "node_class" {
  description = "The Karpenter node class fleets use. The local cluster has kwok's; on AWS use { group = \"karpenter.k8s.aws\", kind = \"EC2NodeClass\", name = \"default\" }."
  type        = object({ group = string, kind = string, name = string })
  default     = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}

variable "self_managed_gpu_server" {
  description = "The node name of a self-managed GPU server (not made by Karpenter) that joins with the training_server_join output, reserved for training."
  type        = string
  default     = "simulated-8xh100-server"
}

variable "consolidate_after" {
  description = "How long an empty fleet node waits before Karpenter removes it."
  type        = string
  default     = "5m"
}

variable "disruption_budget" {
  description = "Most nodes of one fleet Karpenter may remove at once."
  type        = string
  default     = "10%"
}

variable "label_scheme" {
  description = "Node labels the fleets' GPU constraints are written in: cfke, aws or azure; the provider's (cfke unless set) when null. The local cluster's Karpenter offers cfke's instance types, or EC2's under `testbed/cluster.sh up --karpenter=aws`."
  type        = string
  default     = null
}

variable "training_network_bandwidth_min_gbps" {
  description = "Least network bandwidth per training node in Gbps (aws label scheme only, e.g. 3200 for EC2's p5.48xlarge); none by default."
  type        = number
  default     = null
}

variable "spot_training" {
  description = "A spot training fleet besides the on-demand one, for training that checkpoints: e.g. { gpu_models = [\"A100-40GB\", \"A100-80GB\"], gpus_per_node = 8, gpu_limit = 16 }; none by default."
  type        = object({ gpu_models = list(string), gpus_per_node = number, gpu_limit = number })
  default     = null
}

variable "inference" {
  description = "The inference fleet's GPUs and how each is shared: the seed's 1-GPU L4 nodes time-sliced for 4 pods by default. MPS takes { strategy = \"mps\", replicas = N }; MIG needs a MIG-capable model and a layout, e.g. { gpu_models = [\"H100\"], gpus_per_node = 8, sharing = { strategy = \"mig\", mig_layout = \"all-1g.10gb\" } }."
  type = object({
    gpu_models    = list(string)
    gpus_per_node = number
    sharing       = object({ strategy = string, replicas = optional(number), mig_layout = optional(string) })
  })
  default = {
    gpu_models    = ["L4"]
    gpus_per_node = 1
    sharing       = { strategy = "time_slicing", replicas = 4 }
  }
}

variable "training_namespace" {
  description = "Namespace training runs in (the workloads configuration's training_namespace): with inference's, the only one the training fleets admit, and the only one the training priority class admits. The API server refuses, anywhere else, workloads that tolerate the training taint, select a training fleet or name the class."
  type        = string
  default     = "training"
}

variable "inference_namespace" {
  description = "Namespace inference runs in (the workloads configuration's inference_namespace): the only one the inference fleet and the online-inference priority class admit, so no other namespace can preempt training with that class."
  type        = string
  default     = "inference"
}

variable "training_teams" {
  description = "Training teams sharing the training fleet through Kueue queues, as namespace => GPUs, e.g. { team-a = 32, team-b = 32 }: each team's jobs carry only its queue's label (output workloads.training_queues). The namespaces must exist and Kueue must run in the cluster. None by default."
  type        = map(number)
  default     = {}
}

variable "mig_strategy" {
  description = "The MIG strategy every node's device plugin runs with, set in the GPU Operator's ClusterPolicy: \"mixed\" gives each MIG profile a resource of its own (nvidia.com/mig-1g.10gb), \"single\" advertises MIG devices as nvidia.com/gpu; null keeps the ClusterPolicy's (the operator's Helm chart sets single)."
  type        = string
  default     = null
}

module "cluster" {
  source = "./module"

  node_class   = var.node_class
  label_scheme = var.label_scheme
  mig_strategy = var.mig_strategy
  # The server joins with the token: it is not in the cluster before.
  join_training_servers = true
  consolidate_after     = var.consolidate_after
  disruption_budget     = var.disruption_budget

  # The seed's numbers, spelled out (they are also the module's defaults;
  # the inference fleet's come from var.inference).
  training_gpu_models     = ["H100"]
  training_gpus_per_node  = 8
  training_gpu_limit      = 64
  inference_gpu_models    = var.inference.gpu_models
  inference_gpus_per_node = var.inference.gpus_per_node
  inference_sharing       = var.inference.sharing
  training_priority       = { name = "batch-training", value = 1000 }
  inference_priority      = { name = "online-inference", value = 100000 }
  spot_training           = var.spot_training
  training_teams          = var.training_teams
  # Training and inference each in a namespace of its own.
  training_namespaces  = [var.training_namespace]
  inference_namespaces = [var.inference_namespace]
  # Only the aws scheme can say it; null elsewhere.
  training_network_bandwidth_min_gbps = var.training_network_bandwidth_min_gbps
}

# Everything a workload needs, per kind of work: node selector, tolerations,
# priority class name, GPU resource name.
output "workloads" {
  value = {
    training           = module.cluster.training
    inference          = module.cluster.inference
    inference_overflow = module.cluster.inference_overflow
    general            = module.cluster.general
    spot_training      = module.cluster.spot_training
    training_queues    = module.cluster.training_queues
  }
}

output "training_servers" {
  value = [var.self_managed_gpu_server]
}

# Give this to the server (it carries the token: keep it secret).
output "training_server_join" {
  value     = module.cluster.training_server_join
  sensitive = true
}
