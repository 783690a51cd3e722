# The cfke label scheme has no network bandwidth label.
# expect: plan
# path: network_bandwidth_min_gbps
# message: label scheme
resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme               = "cfke"
  network_bandwidth_min_gbps = 400 # <- diagnostic
}
