# No GPU has 10 TiB.
# expect: validate
# path: min_memory_gib
# message: outside
data "gpufleet_accelerators" "this" {
  min_memory_gib = 10001 # <- diagnostic
}
