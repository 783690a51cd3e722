# kubeadm's ttl 0 (a token that never expires) is refused.
# expect: validate
# path: ttl
# message: never expires
resource "gpufleet_node_join" "this" {
  ttl = "0s" # <- diagnostic
}
