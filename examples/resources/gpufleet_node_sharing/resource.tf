# A self-managed DGX server outside any fleet: its eight A100s split into
# seven MIG devices each, every device time-sliced two ways.
resource "gpufleet_node_sharing" "dgx" {
  name       = "dgx"
  node_name  = "dgx-a100-1"
  strategy   = "mig"
  mig_layout = "all-1g.10gb"
  replicas   = 2
}

# Every node of a lab pool shares its GPUs by MPS, ten clients each.
resource "gpufleet_node_sharing" "lab" {
  name          = "lab"
  node_selector = { "example.com/pool" = "lab" }
  strategy      = "mps"
  replicas      = 10
}

output "lab_nodes" {
  value = gpufleet_node_sharing.lab.nodes
}
