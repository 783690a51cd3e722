# A list where a string belongs.
# expect: validate
# path: sharing
# message: string required
data "gpufleet_accelerators" "this" {
  sharing = ["mig"] # <- diagnostic
}
