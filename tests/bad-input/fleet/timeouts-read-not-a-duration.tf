# timeouts.read is a number without a unit.
# expect: validate
# path: timeouts.read
# message: duration
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  timeouts = {
    read = "90" # <- diagnostic
  }
}
