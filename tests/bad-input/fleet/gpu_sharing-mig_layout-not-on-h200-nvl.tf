# Since GPU Operator v25.10.1 mig-manager's default all-1g.35gb has a device filter that
# names the H200 SXM only; an H200 NVL would keep the MIG configuration it had.
# expect: validate
# path: gpu_sharing.mig_layout
# message: restricts `all-1g.35gb` to other PCI devices, so the H200-NVL (0x233B10DE)
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["H200-NVL"]
  gpu_sharing  = { strategy = "mig", mig_layout = "all-1g.35gb" } # <- diagnostic
}
