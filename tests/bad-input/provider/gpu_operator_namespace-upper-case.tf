# A namespace name is lower case.
# expect: validate
# path: gpu_operator_namespace
# message: DNS-1123 label
provider "gpufleet" {
  host                   = "https://127.0.0.1:1"
  gpu_operator_namespace = "GPU-Operator" # <- diagnostic
}

data "gpufleet_accelerators" "all" {}
