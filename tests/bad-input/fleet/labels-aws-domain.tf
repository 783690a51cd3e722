# The AWS provider reserves its label domain.
# expect: validate
# path: labels["karpenter.k8s.aws/instance-family"]
# message: reserved
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  labels = {
    team                                = "ml"
    "karpenter.k8s.aws/instance-family" = "p5" # <- diagnostic
  }
}
