import {
  to = gpufleet_priority_class.training
  id = "batch-training"
}
