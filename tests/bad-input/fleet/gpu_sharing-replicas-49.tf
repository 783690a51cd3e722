# The MPS daemon serves at most 48 clients per GPU.
# expect: validate
# path: gpu_sharing.replicas
# message: more MPS clients than
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"]
  gpu_sharing  = { strategy = "mps", replicas = 49 } # <- diagnostic
}
