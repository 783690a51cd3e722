# Label schemes are lower case.
# expect: validate
# path: label_scheme
# message: is not one of
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme = "CFKE" # <- diagnostic
}
