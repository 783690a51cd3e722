# A bad label scheme known only at plan.
# expect: plan
# path: label_scheme
# message: is not one of
variable "scheme" {
  default = "nebius"
}

provider "gpufleet" {
  config_path  = "/nonexistent/kubeconfig"
  label_scheme = var.scheme # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
