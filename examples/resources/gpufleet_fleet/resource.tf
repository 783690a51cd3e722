# Training and inference side by side: a fleet of 8×H100 nodes for training
# and one of L4 nodes for inference, each tainted so that only its own
# workloads land on it. Both build their nodes from one EC2NodeClass.
locals {
  node_class = {
    group = "karpenter.k8s.aws"
    kind  = "EC2NodeClass"
    name  = "gpu"
  }
}

resource "gpufleet_fleet" "training" {
  name              = "training"
  label_scheme      = "aws"
  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  # Multi-node training: p5.48xlarge, with 3200 Gbps of EFA networking.
  network_bandwidth_min_gbps = 3200
  capacity_types             = ["on-demand", "reserved"]
  node_class                 = local.node_class
  taints                     = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  limits                     = { gpus = 64 }
  # Only the training team's namespace may tolerate these taints: the API
  # server refuses such pods (and workloads) anywhere else.
  allowed_namespaces = ["training"]

  # Long jobs: only replace empty nodes, one at a time.
  disruption = {
    consolidation_policy = "WhenEmpty"
    consolidate_after    = "10m"
    budgets              = [{ nodes = "1" }]
  }
}

resource "gpufleet_fleet" "inference" {
  name         = "inference"
  label_scheme = "aws"
  accelerators = ["L4"]
  # Serving replicas stay on capacity the cloud does not reclaim.
  capacity_types = ["on-demand"]
  node_class     = local.node_class
  taints         = [{ key = "workload", value = "inference", effect = "NoSchedule" }]
  limits         = { gpus = 16 }
  # Namespaces labelled for serving may use it; start with warnings only.
  allowed_namespace_selector = { "example.com/serving" = "true" }
  namespace_enforcement      = "warn"
}

# What a training Job or an inference Deployment needs to land on its fleet,
# and what it requests per node besides GPUs: for the training fleet its 32
# EFA interfaces ({ "vpc.amazonaws.com/efa" = "32" }), for inference nothing.
output "scheduling" {
  value = {
    for fleet in [gpufleet_fleet.training, gpufleet_fleet.inference] : fleet.name => {
      node_selector          = fleet.node_selector
      tolerations            = fleet.tolerations
      interconnect_resources = fleet.interconnect_resources
    }
  }
}
