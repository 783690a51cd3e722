# timeouts.create is a word, not a duration.
# expect: validate
# path: timeouts.create
# message: duration
resource "gpufleet_gpu_sharing" "this" {
  strategy = "none"
  timeouts = {
    create = "soon" # <- diagnostic
  }
}
