# A slash is not allowed in a label value.
# expect: validate
# path: labels
# message: not a valid label value
resource "gpufleet_priority_class" "this" {
  name   = "inference"
  value  = 1000
  labels = { team = "ml/serving" } # <- diagnostic
}
