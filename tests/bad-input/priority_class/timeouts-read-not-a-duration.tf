# timeouts.read is a number without a unit.
# expect: validate
# path: timeouts.read
# message: duration
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1000
  timeouts = {
    read = "90" # <- diagnostic
  }
}
