# Every node has its own hostname.
# expect: validate
# path: labels["kubernetes.io/hostname"]
# message: reserved
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  labels = {
    team                     = "ml"
    "kubernetes.io/hostname" = "gpu-1" # <- diagnostic
  }
}
