# A bad model next to one known only after apply.
# expect: validate
# path: accelerators
# message: unknown accelerator
resource "terraform_data" "model" {
  input = "H100"
}

resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["Radeon", terraform_data.model.output] # <- diagnostic
}
