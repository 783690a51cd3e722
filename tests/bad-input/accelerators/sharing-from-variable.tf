# A bad mode known only at plan.
# expect: plan
# path: sharing
# message: is not one of
variable "mode" {
  default = "partitioned"
}

data "gpufleet_accelerators" "this" {
  sharing = var.mode # <- diagnostic
}
