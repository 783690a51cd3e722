terraform {
  required_version = ">= 1.6"
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}
