# Two teams share the 64-GPU training fleet through Kueue: 32 GPUs each,
# lent to each other while idle and taken back (reclaim) when their owner
# submits. The fleet is offered to Kueue as a flavor, so a job carries only
# the queue's label: Kueue adds the fleet's node selector and tolerations
# when it admits the job, and holds the job (suspended, no pod, no node)
# while the cohort has no GPUs for it.
resource "gpufleet_fleet" "training" {
  name              = "training"
  node_class        = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "default" }
  accelerators      = ["H100"]
  accelerator_count = { min = 8, max = 8 }
  taints            = [{ key = "workload", value = "training", effect = "NoSchedule" }]
  limits            = { gpus = 64 }
  kueue_flavor      = true
}

resource "gpufleet_queue" "team_a" {
  name       = "team-a"
  namespaces = ["team-a"]
  cohort     = "training"
  quotas = [{
    fleet        = gpufleet_fleet.training.name
    gpu_resource = gpufleet_fleet.training.gpu_resource
    gpus         = 32
  }]
  preemption = {
    reclaim_within_cohort = "Any"
    within_queue          = "LowerPriority"
  }
}

resource "gpufleet_queue" "team_b" {
  name       = "team-b"
  namespaces = ["team-b"]
  cohort     = "training"
  quotas = [{
    fleet        = gpufleet_fleet.training.name
    gpu_resource = gpufleet_fleet.training.gpu_resource
    gpus         = 32
  }]
  preemption = {
    reclaim_within_cohort = "Any"
    within_queue          = "LowerPriority"
  }
}

# What team A's jobs write: labels = { "kueue.x-k8s.io/queue-name" = "team-a" }.
output "team_a_job_labels" {
  value = gpufleet_queue.team_a.queue_label
}
