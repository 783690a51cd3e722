# A number of more than 4096 digits is refused while decoding.
# expect: validate
# path: value
# message: at most 4096 digits
# gap: line: a decoding error carries its attribute path only in its text, so the CLI shows it without a position
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1e5000 # <- diagnostic
}
