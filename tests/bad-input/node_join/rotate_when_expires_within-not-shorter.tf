# A rotation window as long as the ttl would replace the token on every plan.
# expect: validate
# path: rotate_when_expires_within
# message: not shorter than the token's ttl
resource "gpufleet_node_join" "this" {
  ttl                        = "1h"
  rotate_when_expires_within = "2h" # <- diagnostic
}
