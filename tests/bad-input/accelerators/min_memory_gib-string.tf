# A size with a unit is not a number.
# expect: validate
# path: min_memory_gib
# message: number is required
data "gpufleet_accelerators" "this" {
  min_memory_gib = "80Gi" # <- diagnostic
}
