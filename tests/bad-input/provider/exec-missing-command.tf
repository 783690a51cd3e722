# An exec credential plugin needs a command.
# expect: validate
# path: exec
# message: command
provider "gpufleet" {
  host = "https://127.0.0.1:1"
  exec = { api_version = "client.authentication.k8s.io/v1" } # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
