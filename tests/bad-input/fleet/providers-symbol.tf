# A provider with a symbol is no label value.
# expect: validate
# path: providers
# message: not a valid label value
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  providers  = ["aws!"] # <- diagnostic
}
