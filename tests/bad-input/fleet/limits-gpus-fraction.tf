# GPUs are whole.
# expect: validate
# path: limits.gpus
# message: whole number
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  limits = {
    gpus = 7.5 # <- diagnostic
  }
}
