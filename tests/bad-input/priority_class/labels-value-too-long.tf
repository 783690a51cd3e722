# A label value holds at most 63 characters.
# expect: validate
# path: labels
# message: not a valid label value
resource "gpufleet_priority_class" "this" {
  name   = "inference"
  value  = 1000
  labels = { team = "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm" } # <- diagnostic
}
