# The name part must end with a letter or digit.
# expect: validate
# path: annotations
# message: not a valid key
resource "gpufleet_priority_class" "this" {
  name        = "inference"
  value       = 1000
  annotations = { "owner-" = "ml" } # <- diagnostic
}
