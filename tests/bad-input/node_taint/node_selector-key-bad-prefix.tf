# The prefix of a key is a DNS subdomain.
# expect: validate
# path: node_selector
# message: not a DNS subdomain
resource "gpufleet_node_taint" "this" {
  node_selector = { "Example.com/gpu" = "h100" } # <- diagnostic
  taints        = [{ key = "workload", value = "training", effect = "NoSchedule" }]
}
