# kueue_flavor is true or false.
# expect: validate
# path: kueue_flavor
# message: bool is required
resource "gpufleet_fleet" "this" {
  name         = "training"
  accelerators = ["H100"]
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  kueue_flavor = "yes please" # <- diagnostic
}
