# An AKSNodeClass's nodes carry Azure's labels, never EC2's.
# expect: validate
# path: label_scheme
# message: contradicts the node class
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.azure.com", kind = "AKSNodeClass", name = "default" }
  label_scheme = "aws" # <- diagnostic
  accelerators = ["H100"]
}
