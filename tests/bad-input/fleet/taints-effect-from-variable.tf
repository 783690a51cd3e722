# A bad effect known only at plan.
# expect: plan
# path: taints[0].effect
# message: is not one of
variable "effect" {
  default = "NoRun"
}

resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  taints = [
    { key = "workload", effect = var.effect }, # <- diagnostic
  ]
}
