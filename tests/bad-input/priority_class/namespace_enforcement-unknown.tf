# Enforcement is deny, warn or audit.
# expect: validate
# path: namespace_enforcement
# message: is not one of
resource "gpufleet_priority_class" "this" {
  name  = "online-inference"
  value = 100000
  allowed_namespaces    = ["inference"]
  namespace_enforcement = "Deny" # <- diagnostic
}
