# Whole GiB only.
# expect: validate
# path: min_memory_gib
# message: whole number
data "gpufleet_accelerators" "this" {
  min_memory_gib = 0.5 # <- diagnostic
}
