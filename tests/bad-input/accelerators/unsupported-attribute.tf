# An attribute the data source does not have.
# expect: validate
# path: vendor
# message: vendor
data "gpufleet_accelerators" "this" {
  vendor = "nvidia" # <- diagnostic
}
