# A model from the catalog data source, with a label scheme that cannot name it, known at plan.
# expect: plan
# path: accelerators
# message: label scheme
data "gpufleet_accelerators" "l4" {
  names = ["L4"]
}

resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme = "azure"
  accelerators = [for a in data.gpufleet_accelerators.l4.accelerators : a.name] # <- diagnostic
}
