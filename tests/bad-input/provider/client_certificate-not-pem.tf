# Not a PEM certificate.
# expect: plan
# path: client_certificate
# message: certificate
# gap: caught: PEM is not parsed until the first request
provider "gpufleet" {
  host               = "https://127.0.0.1:1"
  client_certificate = "not a certificate" # <- diagnostic
  client_key         = "not a key"
}


data "gpufleet_accelerators" "all" {}
