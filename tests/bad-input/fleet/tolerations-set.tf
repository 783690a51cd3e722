# tolerations is computed from taints.
# expect: validate
# path: tolerations
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name        = "gpu"
  node_class  = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  tolerations = [] # <- diagnostic
}
