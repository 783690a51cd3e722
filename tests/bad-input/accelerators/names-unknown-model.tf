# A model the catalog does not know.
# expect: validate
# path: names
# message: unknown accelerator
data "gpufleet_accelerators" "this" {
  names = ["H100", "MI300X"] # <- diagnostic
}
