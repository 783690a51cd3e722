resource "gpufleet_fleet" "spot_mixed_gpu" {
  name              = "__NAME__"
  label_scheme      = "aws"
  node_class        = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "gpu" }
  accelerators      = ["L4", "A10G", "L40S"]
  capacity_types    = ["spot"]
  instance_families = ["g5", "g6", "g6e"]
  min_values        = { instance_families = 3 }
  requirements      = [{ key = "node.kubernetes.io/instance-type", operator = "Exists", min_values = 5 }]
  taints            = [{ key = "workload", value = "batch", effect = "NoSchedule" }]
  expire_after      = "24h"
  limits            = { gpus = 32, "ephemeral-storage" = "20Ti" }
  disruption = {
    consolidate_after = "10m"
    budgets           = [{ nodes = "20%", reasons = ["Empty", "Underutilized"] }]
  }
}
