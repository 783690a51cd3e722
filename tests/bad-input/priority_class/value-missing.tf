# value is required.
# expect: validate
# path: value
# message: required
resource "gpufleet_priority_class" "this" { # <- diagnostic
  name = "inference"
}
