# Exec credential plugins speak client.authentication.k8s.io/v1 or v1beta1.
# expect: plan
# path: exec.api_version
# message: api_version
# gap: caught: exec settings are not checked until the first request
provider "gpufleet" {
  host = "https://127.0.0.1:1"
  exec = {
    api_version = "v1" # <- diagnostic
    command     = "aws"
  }
}


data "gpufleet_accelerators" "all" {}
