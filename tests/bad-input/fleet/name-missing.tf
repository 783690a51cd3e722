# name is required.
# expect: validate
# path: name
# message: required
resource "gpufleet_fleet" "this" { # <- diagnostic
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}
