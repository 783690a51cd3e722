# An underscore is not allowed in a NodePool name.
# expect: validate
# path: name
# message: not a valid name
resource "gpufleet_fleet" "this" {
  name       = "gpu_training" # <- diagnostic
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}
