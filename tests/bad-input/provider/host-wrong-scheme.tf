# The API server speaks https (or http).
# expect: plan
# path: host
# message: host
provider "gpufleet" {
  host = "ftp://127.0.0.1:1" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
