# The API server speaks https (or http).
# expect: plan
# path: host
# message: host
# gap: caught: host is not checked until the first request
provider "gpufleet" {
  host = "ftp://127.0.0.1:1" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
