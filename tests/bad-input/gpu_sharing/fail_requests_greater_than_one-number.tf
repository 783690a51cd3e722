# A count where a bool belongs.
# expect: validate
# path: fail_requests_greater_than_one
# message: bool required
resource "gpufleet_gpu_sharing" "this" {
  strategy                       = "time_slicing"
  replicas                       = 4
  fail_requests_greater_than_one = 1 # <- diagnostic
}
