# A list where a bool belongs.
# expect: validate
# path: global_default
# message: bool
resource "gpufleet_priority_class" "this" {
  name           = "inference"
  value          = 1000
  global_default = [true] # <- diagnostic
}
