# An object where a context name belongs.
# expect: validate
# path: config_context
# message: string required
provider "gpufleet" {
  config_path    = "/nonexistent/kubeconfig"
  config_context = { name = "kind" } # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
