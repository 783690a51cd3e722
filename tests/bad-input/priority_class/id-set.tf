# id is computed: a configuration cannot set it.
# expect: validate
# path: id
# message: is set by the provider
resource "gpufleet_priority_class" "this" {
  id    = "inference" # <- diagnostic
  name  = "inference"
  value = 1000
}
