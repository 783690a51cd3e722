# One cluster for GPU training and GPU inference.
# `make demo` applies this against the local control plane.

terraform {
  required_providers {
    gpufleet = {
      source = "gpufleet/gpufleet"
    }
  }
}

# Reads KUBECONFIG (make demo points it at target/cluster/kubeconfig).
provider "gpufleet" {}

# Inference is latency-sensitive: high priority, may preempt training.
resource "gpufleet_priority_class" "inference" {
  name        = "online-inference"
  value       = 100000
  description = "Online inference: preempts batch training when GPUs are short."
}

# Training waits its turn and never evicts anyone.
resource "gpufleet_priority_class" "training" {
  name              = "batch-training"
  value             = 1000
  preemption_policy = "Never"
  description       = "Batch training: low priority, never preempts."
}

output "priority_classes" {
  value = {
    (gpufleet_priority_class.inference.name) = gpufleet_priority_class.inference.value
    (gpufleet_priority_class.training.name)  = gpufleet_priority_class.training.value
  }
}
