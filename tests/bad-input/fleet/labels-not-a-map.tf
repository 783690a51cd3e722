# A list where a map belongs.
# expect: validate
# path: labels
# message: map of string required
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  labels     = ["team"] # <- diagnostic
}
