# Beyond 48, known only at plan.
# expect: plan
# path: replicas
# message: outside
variable "replicas" {
  default = 100
}

resource "gpufleet_gpu_sharing" "this" {
  strategy = "mps"
  replicas = var.replicas # <- diagnostic
}
