# A queue without quotas admits nothing.
# expect: validate
# path: quotas
# message: must not be empty
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas     = [] # <- diagnostic
}
