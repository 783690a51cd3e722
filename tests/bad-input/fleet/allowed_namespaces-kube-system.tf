# kube-system is always exempt from the fence, so allowing it changes nothing.
# expect: validate
# path: allowed_namespaces
# message: always exempt
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  allowed_namespaces = ["training", "kube-system"] # <- diagnostic
}
