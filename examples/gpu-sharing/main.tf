# Inference shares GPUs, training keeps them dedicated: a cluster-wide
# default of time slicing, an inference fleet of L4s whose nodes each serve
# eight pods per GPU (Karpenter plans them so, through NodeOverlays), a MIG
# fleet of H100s, and a training fleet that opts out of the default. One
# apply: the fleets reference the cluster-wide sharing's `mig_strategy`, so
# their plans use the strategy it sets, and Terraform applies it (pointing
# the GPU Operator's ClusterPolicy at gpufleet's ConfigMap) first.

terraform {
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}

provider "gpufleet" {
  # Where the GPU Operator runs; the device-plugin ConfigMap goes there.
  gpu_operator_namespace = "gpu-operator"
}

locals {
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}

resource "gpufleet_gpu_sharing" "default" {
  strategy     = "time_slicing"
  replicas     = 2
  mig_strategy = "mixed" # MIG fleets advertise nvidia.com/mig-<profile>
}

resource "gpufleet_fleet" "inference" {
  name              = "inference"
  accelerators      = ["L4"]
  accelerator_count = { min = 1, max = 1 }
  capacity_types    = ["on-demand"]
  node_class        = local.node_class
  taints            = [{ key = "workload", value = "inference", effect = "NoSchedule" }]
  gpu_sharing = {
    strategy     = "time_slicing"
    replicas     = 8
    mig_strategy = gpufleet_gpu_sharing.default.mig_strategy
  }
}

resource "gpufleet_fleet" "small_models" {
  name              = "small-models"
  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  capacity_types    = ["on-demand"]
  node_class        = local.node_class
  taints            = [{ key = "workload", value = "inference", effect = "NoSchedule" }]
  # Under "mixed" each MIG device is nvidia.com/mig-1g.10gb (gpu_resource);
  # under "single", the GPU Operator's default, it would be nvidia.com/gpu.
  gpu_sharing = {
    strategy     = "mig"
    mig_layout   = "all-1g.10gb"
    mig_strategy = gpufleet_gpu_sharing.default.mig_strategy
  }
}

resource "gpufleet_fleet" "training" {
  name              = "training"
  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  node_class        = local.node_class
  taints            = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  gpu_sharing       = { strategy = "none" } # eight GPUs mean eight cards
}

# What an inference Deployment asks for: one `gpu_resource` per replica, up
# to `gpus_per_node_advertised` replicas on each node.
output "inference" {
  value = {
    for fleet in [gpufleet_fleet.inference, gpufleet_fleet.small_models] : fleet.name => {
      node_selector = fleet.node_selector
      tolerations   = fleet.tolerations
      resource      = fleet.gpu_resource
      pods_per_node = fleet.gpus_per_node_advertised
    }
  }
}
