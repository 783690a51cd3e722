# An attribute the provider block does not have.
# expect: validate
# path: namespace
# message: namespace
provider "gpufleet" {
  config_path = "/nonexistent/kubeconfig"
  namespace   = "gpu" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
