# timeouts.update is a negative duration.
# expect: validate
# path: timeouts.update
# message: duration
resource "gpufleet_gpu_sharing" "this" {
  strategy = "none"
  timeouts = {
    update = "-5m" # <- diagnostic
  }
}
