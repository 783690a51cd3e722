# interconnect_resources is computed.
# expect: validate
# path: interconnect_resources
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name                   = "gpu"
  node_class             = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  interconnect_resources = { "vpc.amazonaws.com/efa" = "32" } # <- diagnostic
}
