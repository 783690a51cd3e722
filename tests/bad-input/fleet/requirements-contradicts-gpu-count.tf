# accelerator_count asks for 8 GPUs per node; a requirement for fewer than 4 leaves no node (cfke scheme).
# expect: plan
# path: requirements[0]
# message: contradicts `accelerator_count.min`
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerator_count = { min = 8, max = 8 }
  requirements = [
    { key = "cfke.io/accelerator-count", operator = "Lt", values = ["4"] }, # <- diagnostic
  ]
}
