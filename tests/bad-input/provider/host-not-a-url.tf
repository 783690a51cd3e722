# host is a URL.
# expect: plan
# path: host
# message: host
provider "gpufleet" {
  host = "not a url" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
