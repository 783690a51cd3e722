# Not a bool.
# expect: validate
# path: insecure
# message: bool
provider "gpufleet" {
  host     = "https://127.0.0.1:1"
  insecure = "maybe" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
