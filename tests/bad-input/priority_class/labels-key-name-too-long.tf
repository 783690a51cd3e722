# The name part of a key holds at most 63 characters.
# expect: validate
# path: labels
# message: not a valid key
resource "gpufleet_priority_class" "this" {
  name   = "inference"
  value  = 1000
  labels = { "example.com/kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk" = "ml" } # <- diagnostic
}
