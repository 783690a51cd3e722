# Only the cfke label scheme labels the cloud provider.
# expect: plan
# path: providers
# message: label scheme
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  label_scheme = "azure"
  providers    = ["hetzner"] # <- diagnostic
}
