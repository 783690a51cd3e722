# Far beyond 32 bits.
# expect: validate
# path: value
# message: outside
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1e30 # <- diagnostic
}
