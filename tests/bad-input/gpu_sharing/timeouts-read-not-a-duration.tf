# timeouts.read is a number without a unit.
# expect: validate
# path: timeouts.read
# message: duration
resource "gpufleet_gpu_sharing" "this" {
  strategy = "none"
  timeouts = {
    read = "90" # <- diagnostic
  }
}
