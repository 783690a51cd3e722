# zones allows only zone-a; a requirement asking for zone-b leaves no node.
# expect: plan
# path: requirements[0]
# message: contradicts `zones`
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  zones      = ["zone-a"]
  requirements = [
    { key = "topology.kubernetes.io/zone", operator = "In", values = ["zone-b"] }, # <- diagnostic
  ]
}
