# exec has api_version, command, args and env.
# expect: validate
# path: exec
# message: interactive
# gap: caught: the CLI drops attributes a nested object does not declare before the provider sees them
provider "gpufleet" {
  host = "https://127.0.0.1:1"
  exec = { api_version = "client.authentication.k8s.io/v1", command = "aws", interactive = true } # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
