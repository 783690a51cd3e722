# NodePool names are lower case.
# expect: validate
# path: name
# message: not a valid name
resource "gpufleet_fleet" "this" {
  name       = "Training" # <- diagnostic
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}
