# A self-managed cluster (kubeadm, or any whose API server takes bootstrap
# tokens) of GPU servers you run yourself, with NVIDIA's GPU Operator: new
# servers join with bootstrap tokens, already tainted for their kind of work
# and labelled with their GPU sharing; servers already in the cluster get the
# same taints and sharing by label. No Karpenter: nothing launches nodes.
# docs/guides/getting-started-self-managed.md walks through it.

terraform {
  required_version = ">= 1.5"
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}

# Reads KUBECONFIG, e.g. a copy of kubeadm's /etc/kubernetes/admin.conf.
provider "gpufleet" {
  gpu_operator_namespace = "gpu-operator"
}

locals {
  training  = { key = "workload", value = "training", effect = "NoSchedule" }
  inference = { key = "workload", value = "inference", effect = "NoSchedule" }
}

# Dedicated GPUs wherever nothing else is said, and the GPU Operator's
# ClusterPolicy pointed at gpufleet's device-plugin ConfigMap.
resource "gpufleet_gpu_sharing" "cluster" {
  strategy = "none"
}

resource "gpufleet_priority_class" "inference" {
  name        = "online-inference"
  value       = 100000
  description = "Online inference: preempts batch training when GPUs are short."
}

resource "gpufleet_priority_class" "training" {
  name              = "batch-training"
  value             = 1000
  preemption_policy = "Never"
  description       = "Batch training: waits for free GPUs, never preempts."
}

# --- inference servers: L4s time-sliced for 4 pods each -----------------------

# Key node-l4-inference of the device-plugin ConfigMap, and the label that
# selects it on every server of the pool, those joining later included.
resource "gpufleet_node_sharing" "l4_inference" {
  name          = "l4-inference"
  node_selector = { "example.com/pool" = "l4-inference" }
  strategy      = "time_slicing"
  replicas      = 4
}

# Inference servers already in the cluster, by their pool label.
resource "gpufleet_node_taint" "inference" {
  node_selector = { "example.com/pool" = "l4-inference" }
  taints        = [local.inference]
}

# New inference servers register tainted, in the pool, with their sharing.
resource "gpufleet_node_join" "inference" {
  taints         = [local.inference]
  labels         = { "example.com/pool" = "l4-inference" }
  sharing_config = gpufleet_node_sharing.l4_inference.config_key
  # kubeadm init bound its own token group; this binds gpufleet's
  # (system:bootstrappers:gpufleet) the same way. cluster-info exists already
  # and is left alone.
  manage_bootstrap_rbac = true
}

# --- training servers: whole H100s ---------------------------------------------

resource "gpufleet_node_taint" "training" {
  node_selector = { "example.com/pool" = "h100-training" }
  taints        = [local.training]
}

resource "gpufleet_node_join" "training" {
  taints                = [local.training]
  labels                = { "example.com/pool" = "h100-training" }
  manage_bootstrap_rbac = true
}

# Run on each new server: `kubeadm join` with the token and the CA pin, after
# merging kubelet_config into the kubelet's configuration and passing it the
# labels flag. The join command carries the token: keep it secret.
output "join" {
  value = {
    for pool, join in { inference = gpufleet_node_join.inference, training = gpufleet_node_join.training } : pool => {
      kubeadm_join_command        = join.kubeadm_join_command
      kubelet_config              = join.kubelet_config
      kubelet_node_labels_flag    = join.kubelet_node_labels_flag
    }
  }
  sensitive = true
}

# What pods need: the pool's label to select, the taint to tolerate, the class.
output "workloads" {
  value = {
    training = {
      node_selector       = gpufleet_node_join.training.labels
      tolerations         = [merge(local.training, { operator = "Equal" })]
      priority_class_name = gpufleet_priority_class.training.name
    }
    inference = {
      node_selector       = gpufleet_node_join.inference.labels
      tolerations         = [merge(local.inference, { operator = "Equal" })]
      priority_class_name = gpufleet_priority_class.inference.name
    }
  }
}
