# limits has gpus, cpu and memory.
# expect: validate
# path: limits
# message: pods
# gap: caught: the CLI drops attributes a nested object does not declare before the provider sees them
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  limits     = { gpus = 8, pods = 100 } # <- diagnostic
}
