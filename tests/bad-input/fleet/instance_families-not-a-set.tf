# A number where a set belongs.
# expect: validate
# path: instance_families
# message: set of string required
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  instance_families = 5 # <- diagnostic
}
