# count has min and max only.
# expect: validate
# path: accelerator_count
# message: exactly
# gap: caught: the CLI drops attributes a nested object does not declare before the provider sees them
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = { min = 8, exactly = 8 } # <- diagnostic
}
