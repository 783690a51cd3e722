# Inference preempts batch training when GPUs are short; training waits for
# free GPUs and never evicts anyone.
resource "gpufleet_priority_class" "inference" {
  name        = "online-inference"
  value       = 100000
  description = "Online inference: preempts batch training when GPUs are short."
  # Only inference may preempt training: pods naming the class elsewhere are
  # refused by the API server.
  allowed_namespaces = ["inference"]
}

resource "gpufleet_priority_class" "training" {
  name              = "batch-training"
  value             = 1000
  preemption_policy = "Never"
  description       = "Batch training: low priority, never preempts."
}
