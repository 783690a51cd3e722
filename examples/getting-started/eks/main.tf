# An EKS cluster with Karpenter and NVIDIA's GPU Operator (installed by Helm)
# runs GPU training and GPU inference side by side: an H100 training fleet,
# an L4 inference fleet whose GPUs are time-sliced for 4 pods each, an H100
# inference fleet split into MIG 1g.10gb devices, priority classes, and two
# on-premises DGX H100 servers that join tainted for training.
# docs/guides/getting-started-eks.md walks through it.

terraform {
  required_version = ">= 1.5"
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}

# Reads KUBECONFIG, as kubectl does: `aws eks update-kubeconfig --name CLUSTER`
# writes the cluster's entry, with `aws eks get-token` as its credential plugin.
provider "gpufleet" {
  # Where the GPU Operator's Helm release runs; the device-plugin ConfigMap
  # goes there.
  gpu_operator_namespace = "gpu-operator"
}

variable "node_class" {
  description = "The EC2NodeClass the fleets' nodes are built from. gpufleet does not create it: it says which AMI, subnets, security groups and IAM role the nodes get."
  type        = object({ group = string, kind = string, name = string })
  default     = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "gpu" }
}

locals {
  training  = { key = "workload", value = "training", effect = "NoSchedule" }
  inference = { key = "workload", value = "inference", effect = "NoSchedule" }
}

# The cluster-wide default: dedicated GPUs wherever a fleet or a node sharing
# says nothing else, MIG devices advertised one resource per profile
# (nvidia.com/mig-1g.10gb), and the GPU Operator's ClusterPolicy pointed at
# gpufleet's device-plugin ConfigMap (a Helm install reads none).
resource "gpufleet_gpu_sharing" "cluster" {
  strategy     = "none"
  mig_strategy = "mixed"
}

# --- who gives way when GPUs are short ---------------------------------------

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

# --- fleets Karpenter launches on demand --------------------------------------
# The node class is an EC2NodeClass, so the fleets' GPU constraints are
# written in EC2's labels (label_scheme = "aws", planned from the node class).

# 8 x H100 per node (p5.48xlarge), whole GPUs, 64 at most.
resource "gpufleet_fleet" "training" {
  name              = "training"
  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  node_class        = var.node_class
  taints            = [local.training]
  limits            = { gpus = 64 }
}

# One L4 per node (g6, gr6), each shared by 4 pods by time slicing. Karpenter
# counts the 4 nvidia.com/gpu each node advertises: 64 is 16 L4s.
resource "gpufleet_fleet" "inference_l4" {
  name              = "inference-l4"
  accelerators      = ["L4"]
  accelerator_count = { min = 1, max = 1 }
  capacity_types    = ["on-demand"] # serving replicas never on reclaimable spot
  node_class        = var.node_class
  taints            = [local.inference]
  gpu_sharing = {
    strategy     = "time_slicing"
    replicas     = 4
    mig_strategy = gpufleet_gpu_sharing.cluster.mig_strategy
  }
  limits = { gpus = 64 }
}

# 8 x H100 per node, each GPU split into seven 1g.10gb MIG devices: 56 per
# node, which pods ask for as nvidia.com/mig-1g.10gb. Such a node advertises
# no nvidia.com/gpu, so the fleet is capped by its nodes.
resource "gpufleet_fleet" "inference_mig" {
  name              = "inference-mig"
  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  capacity_types    = ["on-demand"]
  node_class        = var.node_class
  taints            = [local.inference]
  gpu_sharing = {
    strategy   = "mig"
    mig_layout = "all-1g.10gb"
    # The strategy the cluster-wide sharing sets in this apply: the plan
    # uses it, and Terraform applies that resource first.
    mig_strategy = gpufleet_gpu_sharing.cluster.mig_strategy
  }
  limits = { nodes = 2 }
}

# --- two on-premises DGX H100 servers -----------------------------------------

# Their own device-plugin configuration, key node-dgx of the ConfigMap:
# dedicated GPUs, whatever the cluster-wide default becomes.
resource "gpufleet_node_sharing" "dgx" {
  name          = "dgx"
  node_selector = { "example.com/pool" = "dgx-h100" }
  strategy      = "none"
}

# The servers join with this token, already tainted for training and
# labelled: nothing else lands on them between joining and the next apply.
# EKS must accept bootstrap tokens for this (see the guide).
resource "gpufleet_node_join" "dgx" {
  ttl    = "24h"
  taints = [local.training]
  labels = { "example.com/pool" = "dgx-h100" }
  # The key gpufleet_node_sharing.dgx writes (node-NAME), written first.
  sharing_config = gpufleet_node_sharing.dgx.config_key
  # What kubeadm init sets up for node bootstrap, under gpufleet's names.
  manage_bootstrap_rbac = true
}

# --- what workloads need -------------------------------------------------------

# Per fleet: where its pods go (node selector, tolerations), what they ask
# for (nvidia.com/gpu, or the MIG device) and how many a node has.
output "fleets" {
  value = {
    for fleet in [gpufleet_fleet.training, gpufleet_fleet.inference_l4, gpufleet_fleet.inference_mig] : fleet.name => {
      node_selector            = fleet.node_selector
      tolerations              = fleet.tolerations
      gpu_resource             = fleet.gpu_resource
      gpus_per_node_advertised = fleet.gpus_per_node_advertised
      priority_class_name      = fleet.name == "training" ? gpufleet_priority_class.training.name : gpufleet_priority_class.inference.name
    }
  }
}

# Give these to each DGX server (the join command carries the token: keep it
# secret). One token joins both while it is valid.
output "dgx_join" {
  value = {
    kubeadm_join_command     = gpufleet_node_join.dgx.kubeadm_join_command
    kubelet_config           = gpufleet_node_join.dgx.kubelet_config
    kubelet_node_labels_flag = gpufleet_node_join.dgx.kubelet_node_labels_flag
  }
  sensitive = true
}
