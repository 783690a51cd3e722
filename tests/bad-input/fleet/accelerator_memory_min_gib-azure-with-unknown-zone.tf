# The azure scheme has no GPU memory label; a zone known only after apply must not hide that.
# expect: plan
# path: accelerator_memory_min_gib
# message: label scheme
# gap: caught: the label-scheme checks are skipped when any node constraint is unknown, even an unrelated one
resource "terraform_data" "zone" {
  input = "zone-a"
}

resource "gpufleet_fleet" "this" {
  name                       = "gpu"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme               = "azure"
  zones                      = [terraform_data.zone.output]
  accelerator_memory_min_gib = 80 # <- diagnostic
}
