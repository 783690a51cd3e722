# A reserved name known only at plan (from a variable).
# expect: plan
# path: name
# message: reserved
variable "class_name" {
  default = "system-batch"
}

resource "gpufleet_priority_class" "this" {
  name  = var.class_name # <- diagnostic
  value = 1000
}
