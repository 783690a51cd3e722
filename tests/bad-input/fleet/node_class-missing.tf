# node_class is required.
# expect: validate
# path: node_class
# message: required
resource "gpufleet_fleet" "this" { # <- diagnostic
  name = "gpu"
}
