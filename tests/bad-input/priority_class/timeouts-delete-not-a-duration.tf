# timeouts.delete is a duration with a space and a spelled-out unit.
# expect: validate
# path: timeouts.delete
# message: duration
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1000
  timeouts = {
    delete = "5 minutes" # <- diagnostic
  }
}
