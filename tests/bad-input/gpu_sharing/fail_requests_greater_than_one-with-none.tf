# Nothing is shared with dedicated GPUs.
# expect: validate
# path: fail_requests_greater_than_one
# message: means nothing
resource "gpufleet_gpu_sharing" "this" {
  strategy                       = "none"
  fail_requests_greater_than_one = true # <- diagnostic
}
