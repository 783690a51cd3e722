# PriorityClass values are 32-bit.
# expect: validate
# path: value
# message: outside
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = -2147483649 # <- diagnostic
}
