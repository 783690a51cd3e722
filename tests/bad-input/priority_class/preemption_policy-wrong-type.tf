# A map where a string belongs.
# expect: validate
# path: preemption_policy
# message: string required
resource "gpufleet_priority_class" "this" {
  name              = "inference"
  value             = 1000
  preemption_policy = { never = true } # <- diagnostic
}
