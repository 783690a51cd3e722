# queue_label is computed: a configuration cannot set it.
# expect: validate
# path: queue_label
# message: is set by the provider
resource "gpufleet_queue" "this" {
  name       = "team-a"
  namespaces = ["team-a"]
  quotas = [{
    fleet        = "training"
    gpu_resource = "nvidia.com/gpu"
    gpus         = 32
  }]
  queue_label = { "kueue.x-k8s.io/queue-name" = "team-a" } # <- diagnostic
}
