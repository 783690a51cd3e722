# Label schemes are lower case.
# expect: validate
# path: label_scheme
# message: is not one of
provider "gpufleet" {
  config_path  = "/nonexistent/kubeconfig"
  label_scheme = "AWS" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
