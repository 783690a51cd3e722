# The provider requirement, so this directory is a configuration of its own
# (`terraform init && terraform validate` work here). The docs show only the
# resource.tf / data-source.tf next to it.
terraform {
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}
