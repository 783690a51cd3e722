# A variant the catalog leaves out on purpose.
# expect: validate
# path: accelerators
# message: not in the catalog
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100 NVL"] # <- diagnostic
}
