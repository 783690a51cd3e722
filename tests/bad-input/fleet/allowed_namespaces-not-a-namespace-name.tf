# Namespace names are DNS-1123 labels: no capitals, no underscores.
# expect: validate
# path: allowed_namespaces
# message: is not a valid name
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  allowed_namespaces = ["ML_Training"] # <- diagnostic
}
