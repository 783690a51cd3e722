# An annotation key with a space.
# expect: validate
# path: annotations
# message: not a valid key
resource "gpufleet_priority_class" "this" {
  name        = "inference"
  value       = 1000
  annotations = { "owned by" = "ml" } # <- diagnostic
}
