# Comparisons take a whole number.
# expect: validate
# path: requirements[0].values
# message: whole number
# gap: names-attribute: the message names `requirements[0]`, not its `values`
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/generation", operator = "Lt", values = ["five"] }, # <- diagnostic
  ]
}
