# A MIG layout known only after apply is still a MIG layout, and MPS has none.
# expect: validate
# path: mig_layout
# message: needs `strategy = "mig"`
resource "terraform_data" "layout" {
  input = "all-1g.10gb"
}

resource "gpufleet_node_sharing" "this" {
  name       = "gpu-1"
  node_name  = "gpu-1"
  strategy   = "mps"
  replicas   = 4
  mig_layout = terraform_data.layout.output # <- diagnostic
}
