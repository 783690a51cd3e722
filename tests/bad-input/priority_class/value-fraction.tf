# A priority is a whole number.
# expect: validate
# path: value
# message: whole number
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1.5 # <- diagnostic
}
