# Out of range, known only at plan.
# expect: plan
# path: value
# message: outside
variable "priority" {
  default = 2000000000
}

resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = var.priority # <- diagnostic
}
