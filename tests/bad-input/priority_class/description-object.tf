# An object where a string belongs.
# expect: validate
# path: description
# message: string required
resource "gpufleet_priority_class" "this" {
  name        = "inference"
  value       = 1000
  description = { text = "serving" } # <- diagnostic
}
