# A label key with a space.
# expect: validate
# path: labels
# message: not a valid key
resource "gpufleet_priority_class" "this" {
  name   = "inference"
  value  = 1000
  labels = { "team name" = "ml" } # <- diagnostic
}
