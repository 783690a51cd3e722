# The kubeconfig file does not exist.
# expect: plan
# path: config_path
# message: kubeconfig
# gap: caught: a missing kubeconfig only warns at configure (a configuration may write it during apply; plans of new objects need no cluster)
provider "gpufleet" {
  config_path = "/nonexistent/kubeconfig" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
