# What workloads put in their pod specs. Tolerations are Kubernetes
# tolerations ({ key, operator, value, effect }); GPUs are requested as
# limits of gpu_resource, the fleet's (with time slicing or MPS a pod asking
# for 1 gets one share of a GPU).

output "training" {
  description = "For training jobs: land on the training fleet, at low priority."
  value = {
    node_selector       = gpufleet_fleet.training.node_selector
    tolerations         = gpufleet_fleet.training.tolerations
    priority_class_name = gpufleet_priority_class.training.name
    gpu_resource        = gpufleet_fleet.training.gpu_resource
    gpus_per_node       = var.training_gpus_per_node
    gpu_limit           = var.training_gpu_limit
    # The label of a node's GPU count, under the fleets' label scheme.
    gpu_count_label = local.gpu_labels.count
    # What a training pod requests besides the GPUs to use the nodes'
    # interconnect (EFA on AWS: { "vpc.amazonaws.com/efa" = "32" }); null
    # where the fleet's label scheme names none.
    interconnect_resources = gpufleet_fleet.training.interconnect_resources
  }
}

output "training_queues" {
  description = "Per training team (namespace): the labels its jobs carry to queue for the training fleet (nothing else: Kueue adds the fleet's node selector and tolerations on admission), and the GPUs its queue holds. Empty without training_teams."
  value = {
    for namespace, queue in gpufleet_queue.team : namespace => {
      labels = queue.queue_label
      gpus   = var.training_teams[namespace]
    }
  }
}

output "spot_training" {
  description = "For training jobs that checkpoint: land on the spot training fleet, at training priority (null without one)."
  value = var.spot_training == null ? null : {
    node_selector       = gpufleet_fleet.spot_training[0].node_selector
    tolerations         = gpufleet_fleet.spot_training[0].tolerations
    priority_class_name = gpufleet_priority_class.training.name
    gpu_resource        = gpufleet_fleet.spot_training[0].gpu_resource
    gpus_per_node       = var.spot_training.gpus_per_node
  }
}

output "inference" {
  description = "For inference services: land on the inference fleet, at high priority."
  value = {
    node_selector       = gpufleet_fleet.inference.node_selector
    tolerations         = gpufleet_fleet.inference.tolerations
    priority_class_name = gpufleet_priority_class.inference.name
    gpu_resource        = gpufleet_fleet.inference.gpu_resource
    # How many gpu_resource one node advertises: GPUs x replicas when shared.
    gpus_per_node_advertised = gpufleet_fleet.inference.gpus_per_node_advertised
    sharing                  = local.inference_sharing
  }
}

# The fleets are kept apart by taints, so priorities only matter where both
# kinds of work may run. Inference that may borrow training GPUs when its own
# fleet cannot grow uses this: it preempts training there, and training never
# preempts it back.
output "inference_overflow" {
  description = "For inference allowed onto the training fleet, preempting training."
  value = {
    node_selector       = gpufleet_fleet.training.node_selector
    tolerations         = concat(gpufleet_fleet.inference.tolerations, gpufleet_fleet.training.tolerations)
    priority_class_name = gpufleet_priority_class.inference.name
    gpu_resource        = gpufleet_fleet.training.gpu_resource
  }
}

output "general" {
  description = "For everything else: CPU-only nodes (null without a general fleet)."
  value = var.general_fleet_name == null ? null : {
    node_selector = gpufleet_fleet.general[0].node_selector
  }
}

output "training_servers" {
  description = "Existing servers carrying the training taint."
  value       = sort([for t in gpufleet_node_taint.training_server : t.node_name])
}

output "training_server_join" {
  description = "What a self-managed server needs to join as a training node (null unless join_training_servers): the token, the API server endpoint, the CA pin, the kubelet fragment and node-labels flag, and the kubeadm join command."
  sensitive   = true
  value = var.join_training_servers ? {
    token                = gpufleet_node_join.training_server[0].token
    endpoint             = gpufleet_node_join.training_server[0].api_server_endpoint
    ca_cert_hash         = gpufleet_node_join.training_server[0].ca_cert_hash
    kubelet_config       = gpufleet_node_join.training_server[0].kubelet_config
    node_labels_flag     = gpufleet_node_join.training_server[0].kubelet_node_labels_flag
    kubeadm_join_command = gpufleet_node_join.training_server[0].kubeadm_join_command
  } : null
}
