# The system- prefix is reserved for Kubernetes' own classes.
# expect: validate
# path: name
# message: reserved
resource "gpufleet_priority_class" "this" {
  name  = "system-inference" # <- diagnostic
  value = 1000
}
