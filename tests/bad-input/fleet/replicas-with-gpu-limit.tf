# A static fleet may only limit nodes.
# expect: validate
# path: limits["gpus"]
# message: may only limit
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  replicas   = 2
  limits = {
    gpus = 16 # <- diagnostic
  }
}
