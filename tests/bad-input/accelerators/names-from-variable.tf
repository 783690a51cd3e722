# An unknown model known only at plan.
# expect: plan
# path: names
# message: unknown accelerator
variable "models" {
  default = ["Gaudi3"]
}

data "gpufleet_accelerators" "this" {
  names = var.models # <- diagnostic
}
