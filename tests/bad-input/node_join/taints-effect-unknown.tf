# A taint's effect is one Kubernetes knows.
# expect: validate
# path: taints[0].effect
# message: is not one of
resource "gpufleet_node_join" "this" {
  taints = [
    { key = "workload", value = "training", effect = "Sometimes" }, # <- diagnostic
  ]
}
