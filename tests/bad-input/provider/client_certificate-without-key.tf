# A client certificate needs its key.
# expect: validate
# path: client_key
# message: go together
provider "gpufleet" { # <- diagnostic
  host               = "https://127.0.0.1:1"
  client_certificate = "-----BEGIN CERTIFICATE-----"
}


data "gpufleet_accelerators" "all" {}
