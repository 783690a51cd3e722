# A list where a string belongs.
# expect: validate
# path: name
# message: string required
resource "gpufleet_priority_class" "this" {
  name  = ["inference"] # <- diagnostic
  value = 1000
}
