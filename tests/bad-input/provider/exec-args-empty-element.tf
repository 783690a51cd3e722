# A null argument.
# expect: plan
# path: exec.args
# message: args
# gap: message: a null in exec.args fails configuration as "Unexpected value shape ... a bug in the gpufleet provider", without the attribute
provider "gpufleet" {
  host = "https://127.0.0.1:1"
  exec = {
    api_version = "client.authentication.k8s.io/v1"
    command     = "aws"
    args        = ["eks", null] # <- diagnostic
  }
}


data "gpufleet_accelerators" "all" {}
