# accelerators is the data source's answer, not an input.
# expect: validate
# path: accelerators
# message: is set by the provider
data "gpufleet_accelerators" "this" {
  accelerators = [] # <- diagnostic
}
