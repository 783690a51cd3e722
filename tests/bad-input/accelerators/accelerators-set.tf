# accelerators is the data source's answer, not an input.
# expect: validate
# path: accelerators
# message: accelerators
# gap: caught: computed-only attributes set in configuration are not rejected
data "gpufleet_accelerators" "this" {
  accelerators = [] # <- diagnostic
}
