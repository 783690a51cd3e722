# A requirement needs an operator (Terraform checks the object's shape).
# expect: validate
# path: requirements
# message: operator
resource "gpufleet_fleet" "this" {
  name         = "gpu"
  node_class   = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  requirements = [{ key = "example.com/rack" }] # <- diagnostic
}
