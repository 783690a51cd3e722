# Not a label scheme gpufleet knows.
# expect: validate
# path: label_scheme
# message: is not one of
provider "gpufleet" {
  config_path  = "/nonexistent/kubeconfig"
  label_scheme = "gke" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
