# An object where a PEM certificate belongs.
# expect: validate
# path: cluster_ca_certificate
# message: string required
provider "gpufleet" {
  host                   = "https://127.0.0.1:1"
  cluster_ca_certificate = { pem = "x" } # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
