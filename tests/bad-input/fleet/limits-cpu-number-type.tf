# A list where a quantity belongs.
# expect: validate
# path: limits
# message: string required
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  limits     = { cpu = ["4"] } # <- diagnostic
}
