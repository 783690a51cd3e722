# args is a list of strings.
# expect: validate
# path: exec
# message: list of string required
provider "gpufleet" {
  host = "https://127.0.0.1:1"
  exec = { api_version = "client.authentication.k8s.io/v1", command = "aws", args = "eks get-token" } # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
