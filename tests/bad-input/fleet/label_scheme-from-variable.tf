# A bad label scheme known only at plan.
# expect: plan
# path: label_scheme
# message: is not one of
variable "scheme" {
  default = "oci"
}

resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme = var.scheme # <- diagnostic
}
