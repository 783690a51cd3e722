# tolerations is computed from taints.
# expect: validate
# path: tolerations
# message: tolerations
# gap: caught: computed-only attributes set in configuration are not rejected
resource "gpufleet_fleet" "this" {
  name        = "gpu"
  node_class  = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  tolerations = [] # <- diagnostic
}
