# timeouts.delete is a duration with a space and a spelled-out unit.
# expect: validate
# path: timeouts.delete
# message: duration
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  timeouts = {
    delete = "5 minutes" # <- diagnostic
  }
}
