# An environment variable name with a space or '='.
# expect: plan
# path: exec.env
# message: env
# gap: caught: exec settings are not checked until the first request
provider "gpufleet" {
  host = "https://127.0.0.1:1"
  exec = {
    api_version = "client.authentication.k8s.io/v1"
    command     = "aws"
    env         = { "AWS PROFILE=x" = "ml" } # <- diagnostic
  }
}


data "gpufleet_accelerators" "all" {}
