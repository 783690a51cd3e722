# Beyond 48 MPS clients, known only at plan.
# expect: plan
# path: replicas
# message: more MPS clients than
variable "replicas" {
  default = 100
}

resource "gpufleet_gpu_sharing" "this" {
  strategy = "mps"
  replicas = var.replicas # <- diagnostic
}
