import {
  to = gpufleet_fleet.training
  id = "training"
}
