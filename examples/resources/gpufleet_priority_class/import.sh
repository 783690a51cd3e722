# A PriorityClass by its name.
terraform import gpufleet_priority_class.training batch-training
