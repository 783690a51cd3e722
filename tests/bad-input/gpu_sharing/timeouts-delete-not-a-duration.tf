# timeouts.delete is a duration with a space and a spelled-out unit.
# expect: validate
# path: timeouts.delete
# message: duration
resource "gpufleet_gpu_sharing" "this" {
  strategy = "none"
  timeouts = {
    delete = "5 minutes" # <- diagnostic
  }
}
