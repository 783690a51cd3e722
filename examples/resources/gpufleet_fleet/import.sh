# A NodePool by its name.
terraform import gpufleet_fleet.training training
