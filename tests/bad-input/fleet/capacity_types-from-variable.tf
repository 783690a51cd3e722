# A bad type known only at plan.
# expect: plan
# path: capacity_types
# message: is not one of
variable "capacity" {
  default = ["preemptible"]
}

resource "gpufleet_fleet" "this" {
  name           = "gpu"
  node_class     = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  capacity_types = var.capacity # <- diagnostic
}
