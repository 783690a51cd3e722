# A MIG layout known only after apply is still a MIG layout, and time slicing has none.
# expect: validate
# path: gpu_sharing.mig_layout
# message: needs `strategy = "mig"`
resource "terraform_data" "layout" {
  input = "all-1g.10gb"
}

resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  gpu_sharing  = { strategy = "time_slicing", replicas = 4, mig_layout = terraform_data.layout.output } # <- diagnostic
}
