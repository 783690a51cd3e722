# An empty command.
# expect: plan
# path: exec.command
# message: command
# gap: caught: exec settings are not checked until the first request
provider "gpufleet" {
  host = "https://127.0.0.1:1"
  exec = {
    api_version = "client.authentication.k8s.io/v1"
    command     = "" # <- diagnostic
  }
}


data "gpufleet_accelerators" "all" {}
