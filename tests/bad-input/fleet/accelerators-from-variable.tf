# An unknown model known only at plan.
# expect: plan
# path: accelerators
# message: unknown accelerator
variable "models" {
  default = ["H100", "MI300X"]
}

resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = var.models # <- diagnostic
}
