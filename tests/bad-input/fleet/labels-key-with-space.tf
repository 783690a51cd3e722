# A label key with a space.
# expect: validate
# path: labels
# message: not a valid key
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  labels     = { "team name" = "ml" } # <- diagnostic
}
