# A100 comes in two memory sizes.
# expect: validate
# path: names
# message: ambiguous
data "gpufleet_accelerators" "this" {
  names = ["A100"] # <- diagnostic
}
