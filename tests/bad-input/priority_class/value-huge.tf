# Far beyond 32 bits.
# expect: validate
# path: value
# message: outside
# gap: message: an integer beyond 64 bits is reported as "not a whole number" instead of out of range
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1e30 # <- diagnostic
}
