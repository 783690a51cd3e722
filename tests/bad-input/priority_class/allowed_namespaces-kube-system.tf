# kube-system is always exempt from the fence, so allowing it changes nothing.
# expect: validate
# path: allowed_namespaces
# message: always exempt
resource "gpufleet_priority_class" "this" {
  name  = "online-inference"
  value = 100000
  allowed_namespaces = ["kube-system"] # <- diagnostic
}
