# id is computed: a configuration cannot set it.
# expect: validate
# path: id
# message: id
# gap: caught: computed-only attributes set in configuration are not rejected
resource "gpufleet_priority_class" "this" {
  id    = "inference" # <- diagnostic
  name  = "inference"
  value = 1000
}
