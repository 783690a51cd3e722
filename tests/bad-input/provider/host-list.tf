# A list where a URL belongs.
# expect: validate
# path: host
# message: string required
provider "gpufleet" {
  host = ["https://127.0.0.1:1"] # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
