# Not a number.
# expect: validate
# path: value
# message: number is required
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = "high" # <- diagnostic
}
