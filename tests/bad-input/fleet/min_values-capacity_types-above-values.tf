# Two capacity types cannot give three values to choose from.
# expect: plan
# path: min_values.capacity_types
# message: min_values.capacity_types is 3
resource "gpufleet_fleet" "this" {
  name           = "gpu"
  node_class     = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  capacity_types = ["spot", "on-demand"]
  min_values     = { capacity_types = 3 } # <- diagnostic
}
