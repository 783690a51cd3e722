# Architectures are lower case.
# expect: validate
# path: architectures
# message: is not one of
resource "gpufleet_fleet" "this" {
  name          = "gpu"
  node_class    = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  architectures = ["ARM64"] # <- diagnostic
}
