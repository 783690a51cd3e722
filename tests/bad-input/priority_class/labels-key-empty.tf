# An empty key.
# expect: validate
# path: labels
# message: must not be empty
resource "gpufleet_priority_class" "this" {
  name   = "inference"
  value  = 1000
  labels = { "" = "ml" } # <- diagnostic
}
