# MIG, known only at plan.
# expect: plan
# path: strategy
# message: is not one of
variable "strategy" {
  default = "mig"
}

resource "gpufleet_gpu_sharing" "this" {
  strategy = var.strategy # <- diagnostic
}
