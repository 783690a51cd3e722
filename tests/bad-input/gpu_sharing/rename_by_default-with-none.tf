# Nothing is shared, so nothing is renamed.
# expect: validate
# path: rename_by_default
# message: nothing is renamed
resource "gpufleet_gpu_sharing" "this" {
  strategy          = "none"
  rename_by_default = true # <- diagnostic
}
