# A number of more than 4096 digits is refused while decoding.
# expect: validate
# path: value
# message: at most 4096 digits
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1e5000 # <- diagnostic
}
