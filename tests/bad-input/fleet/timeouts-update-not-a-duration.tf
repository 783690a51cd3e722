# timeouts.update is a negative duration.
# expect: validate
# path: timeouts.update
# message: duration
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  timeouts = {
    update = "-5m" # <- diagnostic
  }
}
