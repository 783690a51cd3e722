# min_values is at least 1.
# expect: validate
# path: requirements[0].min_values
# message: outside
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack", operator = "In", values = ["r1"], min_values = 0 }, # <- diagnostic
  ]
}
