resource "gpufleet_fleet" "azure_a100" {
  name              = "__NAME__"
  label_scheme      = "azure"
  node_class        = { group = "karpenter.azure.com", kind = "AKSNodeClass", name = "default" }
  accelerators      = ["A100-80GB"]
  accelerator_count = { min = 1, max = 4 }
  instance_families = ["NCADS_A100_v4"]
  min_values        = { accelerator_count = 2 }
  taints            = [{ key = "nvidia.com/gpu", effect = "NoSchedule" }]
  disruption = {
    consolidation_policy = "Balanced"
    consolidate_after    = "5m"
    budgets              = [{ nodes = "2", reasons = ["Empty"] }, { nodes = "10%" }]
  }
}
