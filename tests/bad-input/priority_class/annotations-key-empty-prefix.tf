# A key whose prefix is empty.
# expect: validate
# path: annotations
# message: not a DNS subdomain
resource "gpufleet_priority_class" "this" {
  name        = "inference"
  value       = 1000
  annotations = { "/owner" = "ml" } # <- diagnostic
}
