# A string where an object belongs.
# expect: validate
# path: node_class
# message: object required
resource "gpufleet_fleet" "this" {
  name       = "gpu"
  node_class = "default" # <- diagnostic
}
