# Training and inference side by side: a fleet of 8×H100 nodes for training
# and one of L4 nodes for inference, each tainted so that only its own
# workloads land on it. The node class is kwok's, as on the test cluster; on
# AWS it would be { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "..." }.

terraform {
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}

provider "gpufleet" {
  # The kubeconfig comes from KUBE_CONFIG_PATH or KUBECONFIG unless set here.
  # config_path = "~/.kube/config"

  # GPU constraints become cfke.io/accelerator-* node requirements
  # (the default); "aws" and "azure" use those clouds' Karpenter labels.
  label_scheme = "cfke"
}

locals {
  node_class = {
    group = "karpenter.kwok.sh"
    kind  = "KWOKNodeClass"
    name  = "default"
  }
}

resource "gpufleet_fleet" "training" {
  name              = "training"
  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  node_class        = local.node_class
  taints            = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  limits            = { gpus = 64 }
}

resource "gpufleet_fleet" "inference" {
  name         = "inference"
  accelerators = ["L4"]
  node_class   = local.node_class
  taints       = [{ key = "workload", value = "inference", effect = "NoSchedule" }]
}

# What a training or inference Deployment needs to land on its fleet.
output "scheduling" {
  value = {
    for fleet in [gpufleet_fleet.training, gpufleet_fleet.inference] : fleet.name => {
      node_selector = fleet.node_selector
      tolerations   = fleet.tolerations
    }
  }
}

# GPU models that can be partitioned with MIG, for choosing a fleet's accelerators.
data "gpufleet_accelerators" "mig" {
  sharing = "mig"
}

output "mig_capable" {
  value = [for a in data.gpufleet_accelerators.mig.accelerators : a.name]
}
