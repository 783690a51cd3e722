# An empty list allows no namespace at all; leave the attribute out to allow every one.
# expect: validate
# path: allowed_namespaces
# message: must not be empty
resource "gpufleet_priority_class" "this" {
  name  = "online-inference"
  value = 100000
  allowed_namespaces = [] # <- diagnostic
}
