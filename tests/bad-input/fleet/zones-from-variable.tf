# A bad zone known only at plan.
# expect: plan
# path: zones
# message: not a valid label value
variable "zones" {
  default = ["eu central"]
}

resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  zones      = var.zones # <- diagnostic
}
