# Sharing modes are lower case.
# expect: validate
# path: sharing
# message: is not one of
data "gpufleet_accelerators" "this" {
  sharing = "MIG" # <- diagnostic
}
