# Not a sharing mode.
# expect: validate
# path: sharing
# message: is not one of
data "gpufleet_accelerators" "this" {
  sharing = "vgpu" # <- diagnostic
}
