# A bad operator known only at plan.
# expect: plan
# path: requirements[0].operator
# message: is not one of
variable "operator" {
  default = "Matches"
}

resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "example.com/rack", operator = var.operator, values = ["r1"] }, # <- diagnostic
  ]
}
