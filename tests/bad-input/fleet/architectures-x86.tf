# Kubernetes says amd64, not x86_64.
# expect: validate
# path: architectures
# message: is not one of
resource "gpufleet_fleet" "this" {
  name          = "gpu"
  node_class    = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  architectures = ["x86_64"] # <- diagnostic
}
