# Kubernetes object names are lower case.
# expect: validate
# path: name
# message: not a valid name
resource "gpufleet_priority_class" "this" {
  name  = "Inference" # <- diagnostic
  value = 1000
}
