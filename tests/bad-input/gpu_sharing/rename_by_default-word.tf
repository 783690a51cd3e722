# Not a bool.
# expect: validate
# path: rename_by_default
# message: bool is required
resource "gpufleet_gpu_sharing" "this" {
  strategy          = "time_slicing"
  replicas          = 4
  rename_by_default = "shared" # <- diagnostic
}
