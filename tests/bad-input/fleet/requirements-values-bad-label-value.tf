# Values are label values.
# expect: validate
# path: requirements[0].values
# message: not a valid label value
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack", operator = "In", values = ["rack 1"] }, # <- diagnostic
  ]
}
