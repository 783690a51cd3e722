# A budget needs nodes (Terraform checks the object's shape).
# expect: validate
# path: disruption
# message: nodes
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  disruption = { budgets = [{ reasons = ["Drifted"] }] } # <- diagnostic
}
