# A name too long for a label, known only at plan.
# expect: plan
# path: name
# message: 63
variable "fleet_name" {
  default = "tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt"
}

resource "gpufleet_fleet" "this" {
  name       = var.fleet_name # <- diagnostic
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}
