resource "gpufleet_fleet" "static" {
  name           = "__NAME__"
  node_class     = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "gpu" }
  replicas       = 2
  limits         = { nodes = 4 }
  capacity_types = ["on-demand"]
  requirements   = [{ key = "node.kubernetes.io/instance-type", operator = "In", values = ["p5.48xlarge"] }]
  taints         = [{ key = "dedicated", value = "research", effect = "NoSchedule" }]
  disruption     = { budgets = [{ nodes = "1" }] }
}
