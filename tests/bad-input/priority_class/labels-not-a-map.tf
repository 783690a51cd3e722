# A list where a map belongs.
# expect: validate
# path: labels
# message: map of string required
resource "gpufleet_priority_class" "this" {
  name   = "inference"
  value  = 1000
  labels = ["team"] # <- diagnostic
}
