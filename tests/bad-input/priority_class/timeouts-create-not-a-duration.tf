# timeouts.create is a word, not a duration.
# expect: validate
# path: timeouts.create
# message: duration
resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = 1000
  timeouts = {
    create = "soon" # <- diagnostic
  }
}
