# Memory is not negative.
# expect: validate
# path: min_memory_gib
# message: outside
data "gpufleet_accelerators" "this" {
  min_memory_gib = -1 # <- diagnostic
}
