# Label keys have at most one slash, after a DNS prefix.
# expect: validate
# path: allowed_namespace_selector
# message: is not a DNS subdomain
resource "gpufleet_priority_class" "this" {
  name  = "online-inference"
  value = 100000
  allowed_namespace_selector = { "team/ml/serving" = "yes" } # <- diagnostic
}
