# Below compute capability 7.5 MPS serves at most 16 clients per GPU.
# expect: validate
# path: gpu_sharing.replicas
# message: more MPS clients than V100-16GB serves
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["V100-16GB"]
  gpu_sharing  = { strategy = "mps", replicas = 20 } # <- diagnostic
}
