# The prefix of a key is a DNS subdomain (lower case).
# expect: validate
# path: labels
# message: not a DNS subdomain
resource "gpufleet_priority_class" "this" {
  name   = "inference"
  value  = 1000
  labels = { "Example.com/team" = "ml" } # <- diagnostic
}
