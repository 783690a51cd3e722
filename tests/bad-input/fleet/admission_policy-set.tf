# admission_policy is computed.
# expect: validate
# path: admission_policy
# message: is set by the provider
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  admission_policy = "mine" # <- diagnostic
}
