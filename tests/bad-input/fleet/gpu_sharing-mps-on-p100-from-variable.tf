# MPS on a Pascal GPU, the models known only at plan.
# expect: plan
# path: gpu_sharing.strategy
# message: MPS needs Volta
variable "models" {
  default = ["P100"]
}

resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = var.models
  gpu_sharing  = { strategy = "mps", replicas = 4 } # <- diagnostic
}
