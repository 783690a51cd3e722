# Out of range, known only at plan.
# expect: plan
# path: weight
# message: outside
variable "weight" {
  default = 1000
}

resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  weight     = var.weight # <- diagnostic
}
