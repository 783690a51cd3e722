# Time slicing needs to know how many pods share a GPU.
# expect: validate
# path: replicas
# message: needs `replicas`
resource "gpufleet_gpu_sharing" "this" { # <- diagnostic
  strategy = "time_slicing"
}
