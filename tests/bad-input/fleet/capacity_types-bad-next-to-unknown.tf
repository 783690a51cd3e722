# A bad type next to one known only after apply.
# expect: validate
# path: capacity_types
# message: is not one of
resource "terraform_data" "kind" {
  input = "on-demand"
}

resource "gpufleet_fleet" "this" {
  name           = "gpu"
  node_class     = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  capacity_types = ["spot", terraform_data.kind.output, "cheap"] # <- diagnostic
}
