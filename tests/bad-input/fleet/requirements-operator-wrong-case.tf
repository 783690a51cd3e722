# Operators are case-sensitive.
# expect: validate
# path: requirements[0].operator
# message: is not one of
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack", operator = "in", values = ["r1"] }, # <- diagnostic
  ]
}
