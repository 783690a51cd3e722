# env is a map of strings.
# expect: validate
# path: exec
# message: map of string required
provider "gpufleet" {
  host = "https://127.0.0.1:1"
  exec = { api_version = "client.authentication.k8s.io/v1", command = "aws", env = ["AWS_PROFILE=ml"] } # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
