# A list where a token belongs.
# expect: validate
# path: token
# message: string required
provider "gpufleet" {
  host  = "https://127.0.0.1:1"
  token = ["t"] # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
