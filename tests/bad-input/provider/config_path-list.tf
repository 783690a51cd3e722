# A list where a path belongs.
# expect: validate
# path: config_path
# message: string required
provider "gpufleet" {
  config_path = ["/a", "/b"] # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
