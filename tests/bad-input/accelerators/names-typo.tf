# A near miss gets a suggestion.
# expect: validate
# path: names
# message: did you mean
data "gpufleet_accelerators" "this" {
  names = ["L40X"] # <- diagnostic
}
