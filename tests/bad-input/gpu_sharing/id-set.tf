# id is computed.
# expect: validate
# path: id
# message: is set by the provider
resource "gpufleet_gpu_sharing" "this" {
  strategy = "none"
  id       = "default" # <- diagnostic
}
