# In needs at least one value.
# expect: validate
# path: requirements[0].values
# message: at least one value
# gap: names-attribute: the message names `requirements[0]`, not its `values`
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack", operator = "In" }, # <- diagnostic
  ]
}
