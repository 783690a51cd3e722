# Never, not forever.
# expect: validate
# path: expire_after
# message: not a duration
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  expire_after = "forever" # <- diagnostic
}
