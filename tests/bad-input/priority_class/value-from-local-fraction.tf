# A fraction computed in a local.
# expect: validate
# path: value
# message: whole number
locals {
  half = 1000 / 3
}

resource "gpufleet_priority_class" "this" {
  name  = "inference"
  value = local.half # <- diagnostic
}
