# Spaces are not allowed.
# expect: validate
# path: name
# message: not a valid name
resource "gpufleet_priority_class" "this" {
  name  = "high priority" # <- diagnostic
  value = 1000
}
