# A string where a set belongs.
# expect: validate
# path: names
# message: set of string required
data "gpufleet_accelerators" "this" {
  names = "H100" # <- diagnostic
}
