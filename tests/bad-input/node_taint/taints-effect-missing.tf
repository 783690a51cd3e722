# A taint needs an effect (Terraform checks the object's shape).
# expect: validate
# path: taints
# message: effect
resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints    = [{ key = "workload" }] # <- diagnostic
}
