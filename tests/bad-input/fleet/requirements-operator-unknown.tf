# Not a node selector operator.
# expect: validate
# path: requirements[0].operator
# message: is not one of
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack", operator = "Equals", values = ["r1"] }, # <- diagnostic
  ]
}
