# Not a policy Kubernetes knows.
# expect: validate
# path: preemption_policy
# message: is not one of
resource "gpufleet_priority_class" "this" {
  name              = "inference"
  value             = 1000
  preemption_policy = "Sometimes" # <- diagnostic
}
