# A namespace is either checked and allowed, or never checked: not both.
# expect: validate
# path: allowed_namespaces
# message: both allowed and exempt
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  allowed_namespaces = ["training"] # <- diagnostic
  exempt_namespaces  = ["training", "monitoring"]
}
