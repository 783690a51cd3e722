# A bad effect next to a key known only after apply.
# expect: validate
# path: taints[0].effect
# message: is not one of
resource "terraform_data" "key" {
  input = "workload"
}

resource "gpufleet_node_taint" "this" {
  node_name = "gpu-1"
  taints = [
    { key = terraform_data.key.output, effect = "Drain" }, # <- diagnostic
  ]
}
