# min_values above the number of values listed.
# expect: validate
# path: requirements[0].min_values
# message: only 2 values
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack", operator = "In", values = ["r1", "r2"], min_values = 3 }, # <- diagnostic
  ]
}
