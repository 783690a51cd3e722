# Every node has its own hostname.
# expect: validate
# path: requirements[0].key
# message: reserved
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [
    { key = "kubernetes.io/hostname", operator = "Exists" }, # <- diagnostic
  ]
}
