# An EC2NodeClass's nodes carry EC2's labels, never cfke.io's.
# expect: validate
# path: label_scheme
# message: cfke.io/accelerator-name
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "default" }
  label_scheme = "cfke" # <- diagnostic
  accelerators = ["H100"]
}
