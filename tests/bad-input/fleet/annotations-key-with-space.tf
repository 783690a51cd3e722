# Annotation keys are Kubernetes keys.
# expect: validate
# path: annotations
# message: not a valid key
resource "gpufleet_fleet" "this" {
  name        = "gpu"
  node_class  = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  annotations = { "owner team" = "ml" } # <- diagnostic
}
