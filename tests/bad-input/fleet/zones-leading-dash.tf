# A zone must start with a letter or digit.
# expect: validate
# path: zones
# message: not a valid label value
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  zones      = ["-eu-central-1a"] # <- diagnostic
}
