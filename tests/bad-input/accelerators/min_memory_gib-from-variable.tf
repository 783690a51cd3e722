# Out of range, known only at plan.
# expect: plan
# path: min_memory_gib
# message: outside
variable "gib" {
  default = 20000
}

data "gpufleet_accelerators" "this" {
  min_memory_gib = var.gib # <- diagnostic
}
