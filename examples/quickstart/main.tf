# One Kubernetes cluster for GPU training and GPU inference.
# `make demo` applies this against the local control plane.

terraform {
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}

# Reads KUBECONFIG (make demo points it at target/cluster/kubeconfig).
provider "gpufleet" {}

variable "node_class" {
  description = "The Karpenter node class fleets use. The local demo cluster has kwok's; on AWS use { group = \"karpenter.k8s.aws\", kind = \"EC2NodeClass\", name = \"default\" }."
  type        = object({ group = string, kind = string, name = string })
  default     = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}

variable "self_managed_gpu_server" {
  description = "A GPU server that already exists (not made by the auto-provisioner), to reserve for training."
  type        = string
  default     = "simulated-8xh100-server"
}

# --- priorities: inference preempts, training waits --------------------------

resource "gpufleet_priority_class" "inference" {
  name        = "online-inference"
  value       = 100000
  description = "Online inference: preempts batch training when GPUs are short."
}

resource "gpufleet_priority_class" "training" {
  name              = "batch-training"
  value             = 1000
  preemption_policy = "Never"
  description       = "Batch training: low priority, never preempts."
}

# --- fleets the auto-provisioner creates on demand ---------------------------

resource "gpufleet_fleet" "training" {
  name              = "training"
  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  node_class        = var.node_class
  taints            = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  limits            = { gpus = 64 }
}

resource "gpufleet_fleet" "inference" {
  name           = "inference"
  accelerators   = ["L4"]
  capacity_types = ["on-demand"] # serving replicas never on reclaimable spot
  node_class     = var.node_class
  taints         = [{ key = "workload", value = "inference", effect = "NoSchedule" }]
  limits         = { gpus = 16 }
}

# --- a server that already exists joins the training side ---------------------

resource "gpufleet_node_taint" "training_server" {
  node_name = var.self_managed_gpu_server
  taints    = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}

# What a training Job or inference Deployment needs to land on its fleet.
output "scheduling" {
  value = {
    for fleet in [gpufleet_fleet.training, gpufleet_fleet.inference] : fleet.name => {
      node_selector       = fleet.node_selector
      tolerations         = fleet.tolerations
      priority_class_name = fleet.name == "training" ? gpufleet_priority_class.training.name : gpufleet_priority_class.inference.name
    }
  }
}
