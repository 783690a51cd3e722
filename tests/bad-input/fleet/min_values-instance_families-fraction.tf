# A count of values is whole.
# expect: validate
# path: min_values.instance_families
# message: not a whole number
resource "gpufleet_fleet" "this" {
  name              = "gpu"
  node_class        = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  instance_families = ["p5", "p4d"]
  min_values        = { instance_families = 1.5 } # <- diagnostic
}
