# A100-80GB and A100-40GB share one label value; listing one is not exact.
# expect: plan
# path: accelerators
# message: not expressible exactly
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["A100-80GB"] # <- diagnostic
}
