# An underscore is not allowed in a DNS-1123 name.
# expect: validate
# path: name
# message: not a valid name
resource "gpufleet_priority_class" "this" {
  name  = "high_priority" # <- diagnostic
  value = 1000
}
