# host is a URL.
# expect: plan
# path: host
# message: host
# gap: caught: host is not checked until the first request
provider "gpufleet" {
  host = "not a url" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
