# Exemptions from a fence nobody set up exempt nothing.
# expect: validate
# path: exempt_namespaces
# message: Nothing to enforce
resource "gpufleet_priority_class" "this" {
  name  = "online-inference"
  value = 100000
  exempt_namespaces = ["monitoring"] # <- diagnostic
}
