# token is for host; with a kubeconfig it is silently ignored.
# expect: plan
# path: token
# message: host
# gap: caught: a token without host is silently ignored
provider "gpufleet" {
  config_path = "/nonexistent/kubeconfig"
  token       = "secret" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
