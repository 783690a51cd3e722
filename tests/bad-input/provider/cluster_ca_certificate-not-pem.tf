# Not a PEM certificate.
# expect: plan
# path: cluster_ca_certificate
# message: certificate
# gap: caught: PEM is not parsed until the first request
provider "gpufleet" {
  host                   = "https://127.0.0.1:1"
  cluster_ca_certificate = "not a certificate" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
