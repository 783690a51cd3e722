# time_slicing is spelled with an underscore.
# expect: validate
# path: sharing
# message: is not one of
data "gpufleet_accelerators" "this" {
  sharing = "time-slicing" # <- diagnostic
}
