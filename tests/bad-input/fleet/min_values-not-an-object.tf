# min_values holds one count per constraint attribute.
# expect: validate
# path: min_values
# message: object required
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100"]
  min_values   = 2 # <- diagnostic
}
