# A map where a list of taints belongs.
# expect: validate
# path: taints
# message: list of object required
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  taints     = { key = "workload" } # <- diagnostic
}
