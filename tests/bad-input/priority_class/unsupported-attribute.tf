# An attribute the schema does not have.
# expect: validate
# path: priority
# message: priority
resource "gpufleet_priority_class" "this" {
  name     = "inference"
  value    = 1000
  priority = 5 # <- diagnostic
}
