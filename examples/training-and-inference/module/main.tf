# Training and inference side by side on one cluster: each kind of work gets
# its own GPU fleet, kept apart by taints (and, with training_namespaces and
# inference_namespaces, by the API server, which refuses other namespaces'
# workloads that would use them); priorities decide where both may
# run (inference preempts training, training never preempts); servers that
# exist already join the training side; pods that tolerate neither taint get
# CPU-only nodes. Inference nodes share each GPU among several pods (time
# slicing x4 by default); training keeps whole GPUs. Training teams may share
# the training fleet through Kueue queues (training_teams).

locals {
  no_schedule = "NoSchedule"
  disruption = {
    # Only empty nodes go: Karpenter never moves a running training job or a
    # serving replica to save money.
    consolidation_policy = "WhenEmpty"
    consolidate_after    = var.consolidate_after
    budgets              = [{ nodes = var.disruption_budget }]
  }
  # The scheme's node labels of the GPU model, which a CPU-only fleet
  # requires absent, and of the GPUs per node, which workloads may select on:
  # under the scheme the fleets use (planned from the node class or the
  # provider when var.label_scheme is null).
  gpu_labels = {
    cfke  = { name = "cfke.io/accelerator-name", count = "cfke.io/accelerator-count" }
    aws   = { name = "karpenter.k8s.aws/instance-gpu-name", count = "karpenter.k8s.aws/instance-gpu-count" }
    azure = { name = "karpenter.azure.com/sku-gpu-name", count = "karpenter.azure.com/sku-gpu-count" }
  }[gpufleet_fleet.training.label_scheme]
  # The MIG strategy the cluster-wide sharing sets, referenced so that the
  # fleet's plan uses it and Terraform applies the cluster-wide sharing
  # (which points the GPU Operator at the fleet's key) first.
  inference_sharing = merge(
    var.inference_sharing == null ? { strategy = "none", replicas = null, mig_layout = null } : var.inference_sharing,
    { mig_strategy = gpufleet_gpu_sharing.cluster.mig_strategy },
  )
  # A MIG node advertises MIG devices, not nvidia.com/gpu, so a MIG fleet is
  # capped by its nodes; a shared one counts what it advertises (GPUs x replicas).
  # Who may use the training fleets: training, and inference overflowing
  # onto them (output inference_overflow); null for no fence.
  # The teams' namespaces too: Kueue gives their jobs the fleet's tolerations.
  training_fleet_namespaces = var.training_namespaces == null ? null : setunion(
    var.training_namespaces, var.inference_namespaces == null ? [] : var.inference_namespaces,
    keys(var.training_teams),
  )
  inference_limits = local.inference_sharing.strategy == "mig" ? tomap({
    nodes = ceil(var.inference_gpu_limit / var.inference_gpus_per_node)
    }) : tomap({
    gpus = var.inference_gpu_limit * coalesce(local.inference_sharing.replicas, 1)
  })
}

# The cluster-wide default: dedicated GPUs on every node whose fleet says
# nothing else (training), and the GPU Operator's ClusterPolicy pointed at
# gpufleet's device-plugin ConfigMap, which a Helm install of the operator
# leaves reading none: without it the inference fleet's sharing would never
# reach its nodes.
resource "gpufleet_gpu_sharing" "cluster" {
  strategy     = "none"
  mig_strategy = var.mig_strategy
}

resource "gpufleet_priority_class" "inference" {
  name        = var.inference_priority.name
  value       = var.inference_priority.value
  description = "Online inference: preempts batch training when GPUs are short."
  # Only inference's namespaces may preempt training with it.
  allowed_namespaces = var.inference_namespaces

  lifecycle {
    precondition {
      condition     = var.inference_priority.value > var.training_priority.value
      error_message = "inference_priority.value must be above training_priority.value, or inference could not preempt training."
    }
  }
}

resource "gpufleet_priority_class" "training" {
  name               = var.training_priority.name
  value              = var.training_priority.value
  preemption_policy  = "Never"
  description        = "Batch training: waits for free GPUs, never preempts."
  allowed_namespaces = var.training_namespaces
}

# Training keeps whole GPUs: no gpu_sharing (a job asking for 8 GPUs gets 8 cards).
resource "gpufleet_fleet" "training" {
  name              = var.training_fleet_name
  label_scheme      = var.label_scheme
  accelerators      = var.training_gpu_models
  accelerator_count = { min = var.training_gpus_per_node, max = var.training_gpus_per_node }
  # The fast interconnect multi-node training needs, where the scheme can say it.
  network_bandwidth_min_gbps = var.training_network_bandwidth_min_gbps
  node_class                 = var.node_class
  taints                     = [merge(var.training_taint, { effect = local.no_schedule })]
  limits                     = { gpus = var.training_gpu_limit }
  disruption                 = local.disruption
  allowed_namespaces         = local.training_fleet_namespaces
  # Offered to Kueue when teams queue for it: a team's job names only its
  # queue, and Kueue adds the fleet's node selector and tolerations.
  kueue_flavor = length(var.training_teams) > 0

  lifecycle {
    precondition {
      condition     = var.training_gpu_limit >= var.training_gpus_per_node
      error_message = "training_gpu_limit must allow at least one training node (training_gpus_per_node GPUs)."
    }
  }
}

# One Kueue queue per training team, named as its namespace, all in one
# cohort: a team's jobs beyond its GPUs borrow what the others leave idle,
# jobs beyond the cohort's GPUs wait suspended (no pod, so no node), and a
# team that submits within its own GPUs takes them back by preempting the
# borrowers' jobs, whatever their priority.
resource "gpufleet_queue" "team" {
  for_each   = var.training_teams
  name       = each.key
  namespaces = [each.key]
  cohort     = var.training_cohort
  quotas = [{
    fleet        = gpufleet_fleet.training.name
    gpu_resource = gpufleet_fleet.training.gpu_resource
    gpus         = each.value
    # What the fleet's pods request for its interconnect, if anything.
    resources = gpufleet_fleet.training.interconnect_resources == null ? null : {
      for resource, per_node in gpufleet_fleet.training.interconnect_resources :
      resource => tostring(tonumber(per_node) * each.value / var.training_gpus_per_node)
    }
  }]
  preemption = { reclaim_within_cohort = "Any" }

  lifecycle {
    precondition {
      condition     = sum(concat([0], values(var.training_teams))) <= var.training_gpu_limit
      error_message = "training_teams hold more GPUs than training_gpu_limit: Kueue would admit jobs Karpenter may not launch nodes for."
    }
  }
}

# Training that checkpoints can also run on spot capacity, cheaper but
# reclaimable at short notice: a fleet of its own, under the training taint
# and limit of its own, which jobs choose by its node selector.
resource "gpufleet_fleet" "spot_training" {
  count              = var.spot_training == null ? 0 : 1
  name               = var.spot_training_fleet_name
  label_scheme       = var.label_scheme
  accelerators       = var.spot_training.gpu_models
  accelerator_count  = { min = var.spot_training.gpus_per_node, max = var.spot_training.gpus_per_node }
  capacity_types     = ["spot"]
  node_class         = var.node_class
  taints             = [merge(var.training_taint, { effect = local.no_schedule })]
  limits             = { gpus = var.spot_training.gpu_limit }
  disruption         = local.disruption
  allowed_namespaces = local.training_fleet_namespaces
}

resource "gpufleet_fleet" "inference" {
  name               = var.inference_fleet_name
  label_scheme       = var.label_scheme
  accelerators       = var.inference_gpu_models
  accelerator_count  = { min = var.inference_gpus_per_node, max = var.inference_gpus_per_node }
  capacity_types     = var.inference_capacity_types
  node_class         = var.node_class
  taints             = [merge(var.inference_taint, { effect = local.no_schedule })]
  gpu_sharing        = local.inference_sharing
  limits             = local.inference_limits
  disruption         = local.disruption
  allowed_namespaces = var.inference_namespaces
}

resource "gpufleet_fleet" "general" {
  count        = var.general_fleet_name == null ? 0 : 1
  name         = var.general_fleet_name
  label_scheme = var.label_scheme
  node_class   = var.node_class
  # Untainted, so any pod may land here: it must never get a GPU node.
  requirements = [{ key = local.gpu_labels.name, operator = "DoesNotExist" }]
  disruption   = local.disruption
}

resource "gpufleet_node_taint" "training_server" {
  for_each  = toset(var.training_servers)
  node_name = each.value
  taints    = [merge(var.training_taint, { effect = local.no_schedule })]
}

# A join token for self-managed servers that are not in the cluster yet:
# they register with the training taint (the kubelet fragment's
# registerWithTaints), so nothing else lands on them between joining and
# the next apply. Servers already in the cluster take the taint by name above.
resource "gpufleet_node_join" "training_server" {
  count  = var.join_training_servers ? 1 : 0
  taints = [merge(var.training_taint, { effect = local.no_schedule })]
  # What kubeadm init would have set up for node bootstrap: the token
  # group's bindings and the cluster-info ConfigMap.
  manage_bootstrap_rbac = true
}
