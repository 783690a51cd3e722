resource "gpufleet_fleet" "gpu_training" {
  name              = "__NAME__"
  label_scheme      = "aws"
  node_class        = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "gpu" }
  accelerators      = ["H100", "H200"]
  accelerator_count = { min = 8 }
  instance_families = ["p5", "p5e", "p5en"]
  capacity_types    = ["on-demand", "reserved"]
  min_values        = { instance_families = 2 }
  labels            = { workload = "training" }
  taints            = [{ key = "nvidia.com/gpu", effect = "NoSchedule" }]
  limits            = { gpus = 64 }

  expire_after             = "336h"
  termination_grace_period = "24h"
  disruption = {
    consolidation_policy = "WhenEmpty"
    consolidate_after    = "30m"
    budgets = [
      { nodes = "0", reasons = ["Drifted", "Underutilized"], schedule = "0 8 * * mon-fri", duration = "10h" },
      { nodes = "1" },
    ]
  }

  node_pool_labels      = { team = "ml-platform" }
  node_pool_annotations = { "kubernetes.io/description" = "8xH100/H200 nodes for distributed training" }
}
