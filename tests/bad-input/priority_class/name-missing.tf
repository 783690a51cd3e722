# name is required.
# expect: validate
# path: name
# message: required
resource "gpufleet_priority_class" "this" { # <- diagnostic
  value = 1000
}
