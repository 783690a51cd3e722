# The MPS daemon serves at most 48 clients per GPU.
# expect: validate
# path: replicas
# message: more MPS clients than
resource "gpufleet_gpu_sharing" "this" {
  strategy = "mps"
  replicas = 49 # <- diagnostic
}
