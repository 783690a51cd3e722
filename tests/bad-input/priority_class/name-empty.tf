# An empty name.
# expect: validate
# path: name
# message: not a valid name
resource "gpufleet_priority_class" "this" {
  name  = "" # <- diagnostic
  value = 1000
}
