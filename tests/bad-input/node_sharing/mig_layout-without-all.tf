# A profile is not a layout: the layout that fills every GPU with it is `all-1g.10gb`.
# expect: validate
# path: mig_layout
# message: did you mean `all-1g.10gb`?
resource "gpufleet_node_sharing" "this" {
  name       = "gpu-1"
  node_name  = "gpu-1"
  strategy   = "mig"
  mig_layout = "1g.10gb" # <- diagnostic
}
