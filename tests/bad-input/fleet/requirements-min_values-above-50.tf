# Karpenter caps min_values at 50.
# expect: validate
# path: requirements[0].min_values
# message: outside
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack", operator = "Exists", min_values = 51 }, # <- diagnostic
  ]
}
