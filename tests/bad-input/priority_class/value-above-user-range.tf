# Values above 1000000000 are for system classes.
# expect: validate
# path: value
# message: outside
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1000000001 # <- diagnostic
}
