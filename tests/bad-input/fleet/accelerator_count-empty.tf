# Neither min nor max.
# expect: validate
# path: accelerator_count
# message: at least one of `min` or `max`
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = {} # <- diagnostic
}
