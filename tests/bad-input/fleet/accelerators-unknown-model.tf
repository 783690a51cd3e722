# A model the catalog does not know.
# expect: validate
# path: accelerators
# message: unknown accelerator
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H100", "Radeon VII"] # <- diagnostic
}
