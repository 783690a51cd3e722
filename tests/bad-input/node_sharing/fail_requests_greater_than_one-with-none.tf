# Nothing is shared with dedicated GPUs.
# expect: validate
# path: fail_requests_greater_than_one
# message: means nothing
resource "gpufleet_node_sharing" "this" {
  name                           = "gpu-1"
  node_name                      = "gpu-1"
  strategy                       = "none"
  fail_requests_greater_than_one = false # <- diagnostic
}
