# Neither min nor max.
# expect: validate
# path: accelerator_count
# message: empty accelerator count
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = {} # <- diagnostic
}
