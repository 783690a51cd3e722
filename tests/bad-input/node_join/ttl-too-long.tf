# A join token is short-lived: at most a week.
# expect: validate
# path: ttl
# message: outside 5m..=168h
resource "gpufleet_node_join" "this" {
  ttl = "720h" # <- diagnostic
}
