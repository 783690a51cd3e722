# A bad policy known only at plan.
# expect: plan
# path: preemption_policy
# message: is not one of
variable "policy" {
  default = "PreemptNever"
}

resource "gpufleet_priority_class" "this" {
  name              = "inference"
  value             = 1000
  preemption_policy = var.policy # <- diagnostic
}
