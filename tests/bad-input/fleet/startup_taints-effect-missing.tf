# A taint needs an effect (Terraform checks the object's shape).
# expect: validate
# path: startup_taints
# message: effect
resource "gpufleet_fleet" "this" {
  name           = "gpu"
  node_class     = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  startup_taints = [{ key = "workload" }] # <- diagnostic
}
