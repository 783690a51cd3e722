# A bad label key known only at plan.
# expect: plan
# path: labels
# message: not a valid key
variable "labels" {
  type    = map(string)
  default = { "bad key" = "x" }
}

resource "gpufleet_priority_class" "this" {
  name   = "inference"
  value  = 1000
  labels = var.labels # <- diagnostic
}
