resource "gpufleet_fleet" "cpu_general" {
  name           = "__NAME__"
  node_class     = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "default" }
  architectures  = ["amd64"]
  capacity_types = ["spot"]
  requirements = [
    { key = "kubernetes.io/os", operator = "In", values = ["linux"] },
    { key = "karpenter.k8s.aws/instance-category", operator = "In", values = ["c", "m", "r"] },
    { key = "karpenter.k8s.aws/instance-generation", operator = "Gt", values = ["2"] },
  ]
  limits = { cpu = 1000, memory = "1000Gi" }
  disruption = {
    consolidation_policy = "WhenEmptyOrUnderutilized"
    consolidate_after    = "1m"
  }
}
