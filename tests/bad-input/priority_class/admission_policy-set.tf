# admission_policy is computed.
# expect: validate
# path: admission_policy
# message: is set by the provider
resource "gpufleet_priority_class" "this" {
  name  = "online-inference"
  value = 100000
  admission_policy = "mine" # <- diagnostic
}
