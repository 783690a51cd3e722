# min above max, known only at plan.
# expect: plan
# path: accelerator_count.min
# message: greater than
variable "min" {
  default = 8
}

resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = {
    min = var.min # <- diagnostic
    max = 4
  }
}
