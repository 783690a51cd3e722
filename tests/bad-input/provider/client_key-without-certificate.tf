# A client key needs its certificate.
# expect: validate
# path: client_certificate
# message: go together
provider "gpufleet" { # <- diagnostic
  host       = "https://127.0.0.1:1"
  client_key = "-----BEGIN PRIVATE KEY-----"
}


data "gpufleet_accelerators" "all" {}
