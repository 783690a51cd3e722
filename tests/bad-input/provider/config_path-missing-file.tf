# The kubeconfig file does not exist.
# expect: plan
# path: config_path
# message: kubeconfig
# gap: caught: the kubeconfig is not read until the first request
provider "gpufleet" {
  config_path = "/nonexistent/kubeconfig" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
