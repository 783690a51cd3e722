variable "node_class" {
  description = "The Karpenter node class every fleet uses, e.g. { group = \"karpenter.k8s.aws\", kind = \"EC2NodeClass\", name = \"gpu\" }."
  type        = object({ group = string, kind = string, name = string })
}

variable "label_scheme" {
  description = "Node labels GPU constraints are written in (cfke, aws or azure); when null, the node class's (an EC2NodeClass means aws), else the provider's."
  type        = string
  default     = null
}

# --- training -----------------------------------------------------------------

variable "training_fleet_name" {
  description = "Name of the training fleet (its NodePool)."
  type        = string
  default     = "training"
}

variable "training_gpu_models" {
  description = "GPU models training nodes may have."
  type        = list(string)
  default     = ["H100"]
}

variable "training_gpus_per_node" {
  description = "GPUs on every training node: a training job's pod asks for all of them."
  type        = number
  default     = 8
}

variable "training_gpu_limit" {
  description = "Most GPUs the training fleet may hold at once."
  type        = number
  default     = 64
}

variable "training_network_bandwidth_min_gbps" {
  description = "Least network bandwidth per training node, in Gbps, for jobs spread over several nodes (aws label scheme only: EC2's p5.48xlarge has 3200 with its EFA interfaces); null for no bound."
  type        = number
  default     = null
}

variable "training_taint" {
  description = "The NoSchedule taint that keeps everything but training off training GPUs."
  type        = object({ key = string, value = string })
  default     = { key = "workload", value = "training" }
}

variable "training_priority" {
  description = "Priority class of training: low, and it never preempts anything (preemptionPolicy Never)."
  type        = object({ name = string, value = number })
  default     = { name = "batch-training", value = 1000 }
}

variable "training_servers" {
  description = "Names of GPU servers that exist already (self-managed, outside any fleet) to reserve for training with the training taint."
  type        = list(string)
  default     = []
}

variable "join_training_servers" {
  description = "Issue a bootstrap token (gpufleet_node_join) with which self-managed GPU servers join as training nodes, registering with the training taint; its join material is the training_server_join output."
  type        = bool
  default     = false
}

variable "spot_training" {
  description = "A second training fleet on spot capacity, for training that checkpoints: { gpu_models, gpus_per_node, gpu_limit }. Its nodes carry the training taint; jobs choose it with the spot_training output. null for none."
  type        = object({ gpu_models = list(string), gpus_per_node = number, gpu_limit = number })
  default     = null
}

variable "spot_training_fleet_name" {
  description = "Name of the spot training fleet (its NodePool)."
  type        = string
  default     = "training-spot"
}

# --- inference ----------------------------------------------------------------

variable "inference_fleet_name" {
  description = "Name of the inference fleet (its NodePool)."
  type        = string
  default     = "inference"
}

variable "inference_gpu_models" {
  description = "GPU models inference nodes may have."
  type        = list(string)
  default     = ["L4"]
}

variable "inference_gpu_limit" {
  description = "Most GPUs (physical, not shares) the inference fleet may hold at once."
  type        = number
  default     = 16
}

variable "inference_taint" {
  description = "The NoSchedule taint that keeps everything but inference off inference GPUs."
  type        = object({ key = string, value = string })
  default     = { key = "workload", value = "inference" }
}

variable "inference_capacity_types" {
  description = "Capacity types inference nodes may use. On-demand by default: spot nodes are reclaimed at short notice, taking serving replicas with them."
  type        = list(string)
  default     = ["on-demand"]
}

variable "inference_priority" {
  description = "Priority class of online inference: high, and it preempts lower-priority pods (training) when GPUs are short."
  type        = object({ name = string, value = number })
  default     = { name = "online-inference", value = 100000 }
  validation {
    condition     = var.inference_priority.value > 0 && var.inference_priority.value <= 1000000000
    error_message = "inference_priority.value must be between 1 and 1000000000 (higher values are reserved for system classes)."
  }
}

variable "inference_gpus_per_node" {
  description = "GPUs on every inference node. Fixed, so Karpenter can plan a shared node's capacity on any cloud (see gpufleet_fleet's node_overlays)."
  type        = number
  default     = 1
}

variable "inference_sharing" {
  description = "How inference nodes share each GPU: { strategy = \"time_slicing\" or \"mps\", replicas = N } lets N pods use one GPU; { strategy = \"mig\", mig_layout = L } splits each GPU into MIG devices (a MIG-capable model; pods ask for the fleet's gpu_resource); null or { strategy = \"none\" } keeps GPUs dedicated."
  type        = object({ strategy = string, replicas = optional(number), mig_layout = optional(string) })
  default     = { strategy = "time_slicing", replicas = 4 }
  validation {
    condition = (
      var.inference_sharing == null ? true :
      var.inference_sharing.strategy == "none" ? var.inference_sharing.replicas == null && var.inference_sharing.mig_layout == null :
      var.inference_sharing.strategy == "mig" ? var.inference_sharing.mig_layout != null :
      contains(["time_slicing", "mps"], var.inference_sharing.strategy) && coalesce(var.inference_sharing.replicas, 0) >= 2 && var.inference_sharing.mig_layout == null
    )
    error_message = "inference_sharing.strategy must be none (alone), time_slicing or mps (with replicas of at least 2), or mig (with a mig_layout)."
  }
}

variable "mig_strategy" {
  description = "The MIG strategy of every node's device plugin, set in the GPU Operator's ClusterPolicy: \"single\" (MIG devices advertised as nvidia.com/gpu, one profile per node) or \"mixed\" (each profile its own resource); null leaves the ClusterPolicy's (the operator's Helm chart sets single)."
  type        = string
  default     = null
}

# --- the rest -------------------------------------------------------------------

variable "general_fleet_name" {
  description = "Name of an untainted CPU-only fleet for pods that tolerate neither GPU taint; null for none."
  type        = string
  default     = "general"
}

variable "consolidate_after" {
  description = "How long a fleet's node must stay empty before Karpenter removes it."
  type        = string
  default     = "5m"
}

variable "disruption_budget" {
  description = "Most nodes of one fleet Karpenter may remove at once: a count or a percentage."
  type        = string
  default     = "10%"
}

variable "training_teams" {
  description = "Training teams sharing the training fleet through Kueue: each team's namespace and the GPUs of the fleet its queue holds. A gpufleet_queue per team, named as its namespace, in cohort training_cohort: a team's jobs carry only the queue's label (the training_queues output), borrow the GPUs other teams leave idle, and wait suspended beyond the cohort's; a team submitting within its GPUs reclaims them by preempting the borrowers. The namespaces must exist (they may use the training fleet), and Kueue must run in the cluster: the training fleet becomes a Kueue flavor. Empty: no queues."
  type        = map(number)
  default     = {}
}

variable "training_cohort" {
  description = "The Kueue cohort of the training teams' queues."
  type        = string
  default     = "training"
}

variable "training_namespaces" {
  description = "Namespaces training runs in. When set, only they may use the training fleets (and inference_namespaces too: inference overflows onto training nodes) and the training priority class: the API server refuses, in any other namespace, pods and workloads that tolerate the training taint, select a training fleet or name the class (a ValidatingAdmissionPolicy per fleet and class, Kubernetes 1.30+). Null: no fence."
  type        = set(string)
  default     = null
}

variable "inference_namespaces" {
  description = "Namespaces inference runs in. When set, only they may use the inference fleet and the inference priority class, so inference cannot preempt training from anywhere else. Null: no fence."
  type        = set(string)
  default     = null
}
