# Not a PEM key (with a real-looking certificate header).
# expect: plan
# path: client_key
# message: key
# gap: caught: PEM is not parsed until the first request
provider "gpufleet" {
  host               = "https://127.0.0.1:1"
  client_certificate = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"
  client_key         = "not a key" # <- diagnostic
}


data "gpufleet_accelerators" "all" {}
