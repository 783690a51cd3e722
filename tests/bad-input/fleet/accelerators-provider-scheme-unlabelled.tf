# The provider's label scheme (azure, set in the module's provider block) cannot name the L4.
# expect: plan
# path: accelerators
# message: label scheme
provider "gpufleet" {
  config_path  = "/nonexistent/kubeconfig"
  label_scheme = "azure"
}

resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators = ["L4"] # <- diagnostic
}
