# Nodes carry the NodePool name in a label: at most 63 characters.
# expect: validate
# path: name
# message: 63
resource "gpufleet_fleet" "this" {
  name       = "tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt" # <- diagnostic
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}
