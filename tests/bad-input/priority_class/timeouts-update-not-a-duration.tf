# timeouts.update is a negative duration.
# expect: validate
# path: timeouts.update
# message: duration
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1000
  timeouts = {
    update = "-5m" # <- diagnostic
  }
}
