# A name must start with a letter or digit.
# expect: validate
# path: name
# message: not a valid name
resource "gpufleet_priority_class" "this" {
  name  = "-inference" # <- diagnostic
  value = 1000
}
