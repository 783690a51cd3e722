# An empty policy.
# expect: validate
# path: preemption_policy
# message: is not one of
resource "gpufleet_priority_class" "this" {
  name              = "inference"
  value             = 1000
  preemption_policy = "" # <- diagnostic
}
