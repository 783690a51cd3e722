# The workloads of the scenario, written from the cluster configuration's
# outputs (read from its state, as an application team would): every manifest
# below takes its node selector, tolerations, priority class and GPU resource
# from there. Each output is one step of the scenario, a Kubernetes List as
# JSON for `kubectl apply -f -`; the seed scenario (test-support/src/scenario/,
# run by `make demo` and tests/system/scenario.rs) applies them in order.
#
# Under kwok nothing runs: kwok marks a pod Running once it is bound, and
# completes a Job's pod after the time its kwok annotations give (the
# pod-complete.stage.kwok.x-k8s.io/* annotations, which a real cluster
# ignores). Images are never pulled.

terraform {
  required_version = ">= 1.6"
}

variable "cluster_state" {
  description = "State file of the cluster configuration (examples/training-and-inference)."
  type        = string
  default     = "../terraform.tfstate"
}

variable "training_namespace" {
  description = "Namespace the training Jobs (and the pods on training GPUs) run in."
  type        = string
  default     = "training"
}

variable "inference_namespace" {
  description = "Namespace the inference Deployments run in."
  type        = string
  default     = "inference"
}

variable "finetune_runs_for" {
  description = "How long the finetune-llm Job's pod runs before it succeeds (under kwok)."
  type        = string
  default     = "20s"
}

data "terraform_remote_state" "cluster" {
  backend = "local"
  config  = { path = var.cluster_state }
}

locals {
  workloads = data.terraform_remote_state.cluster.outputs.workloads
  training  = local.workloads.training
  inference = local.workloads.inference
  # null unless the cluster has a spot training fleet.
  spot_training = local.workloads.spot_training
  server        = data.terraform_remote_state.cluster.outputs.training_servers[0]
  # The training teams' queues (none unless the cluster configuration has
  # training_teams): with two, the first borrows and the second reclaims.
  queues = local.workloads.training_queues
  teams  = sort(keys(local.queues))

  # Long enough to outlast the scenario; the scenario deletes these Jobs.
  long_running = "1h"
  # The simulated programs stop within seconds of being told to.
  grace_seconds = 5

  # One container asking for `gpus` GPUs of `resource` (and some CPU), and
  # on the training fleet for its nodes' interconnect too.
  container = {
    for kind, spec in merge({
      training  = { cpu = "16", memory = "128Gi", resource = local.training.gpu_resource, gpus = local.training.gpus_per_node, interconnect = local.training.interconnect_resources }
      server    = { cpu = "16", memory = "128Gi", resource = local.training.gpu_resource, gpus = local.training.gpus_per_node, interconnect = null }
      inference = { cpu = "2", memory = "8Gi", resource = local.inference.gpu_resource, gpus = 1, interconnect = null }
      }, local.spot_training == null ? {} : {
      spot-training = { cpu = "16", memory = "128Gi", resource = local.spot_training.gpu_resource, gpus = local.spot_training.gpus_per_node, interconnect = null }
      }) : kind => {
      name  = kind
      image = "registry.example/${kind}:1"
      resources = {
        requests = { cpu = spec.cpu, memory = spec.memory }
        limits   = merge({ (spec.resource) = tostring(spec.gpus) }, spec.interconnect == null ? {} : spec.interconnect)
      }
    }
  }

  # A training Job: its pods tolerate the training taint, run at training
  # priority, and count a preemption as no failure (it is not the job's fault).
  training_job = {
    for name, job in merge({
      finetune-llm = { pods = 1, runs_for = var.finetune_runs_for, node_selector = local.training.node_selector, container = "training" }
      # Fills the training fleet up to its GPU limit, but for one node.
      pretrain-70b = { pods = local.training.gpu_limit / local.training.gpus_per_node - 1, runs_for = local.long_running, node_selector = local.training.node_selector, container = "training" }
      # Arrives when the fleet is full: waits, never preempts.
      sweep-lr = { pods = 1, runs_for = local.long_running, node_selector = local.training.node_selector, container = "training" }
      # On the self-managed server, which carries the training taint.
      eval-on-server = { pods = 1, runs_for = local.long_running, node_selector = { "kubernetes.io/hostname" = local.server }, container = "server" }
      }, local.spot_training == null ? {} : {
      # Checkpoints, so it may lose its node: on the spot training fleet.
      hparam-search = { pods = 1, runs_for = local.long_running, node_selector = local.spot_training.node_selector, container = "spot-training" }
      }) : name => {
      apiVersion = "batch/v1"
      kind       = "Job"
      metadata   = { name = name, namespace = var.training_namespace }
      spec = {
        parallelism  = job.pods
        completions  = job.pods
        backoffLimit = 0
        podFailurePolicy = {
          rules = [{ action = "Ignore", onPodConditions = [{ type = "DisruptionTarget", status = "True" }] }]
        }
        template = {
          metadata = {
            labels = { app = name }
            annotations = {
              "pod-complete.stage.kwok.x-k8s.io/delay"        = job.runs_for
              "pod-complete.stage.kwok.x-k8s.io/jitter-delay" = job.runs_for
            }
          }
          spec = {
            restartPolicy                 = "Never"
            terminationGracePeriodSeconds = local.grace_seconds
            priorityClassName             = local.training.priority_class_name
            nodeSelector                  = job.node_selector
            tolerations                   = local.training.tolerations
            containers                    = [local.container[job.container]]
          }
        }
      }
    }
  }

  # Jobs of the training teams: whole training nodes' worth of GPUs, and
  # nothing of the fleet's but the queue's label (no node selector, no
  # toleration, no priority class): Kueue adds the fleet's selector and
  # tolerations when it admits one.
  queued_job = length(local.teams) != 2 ? {} : {
    for name, job in {
      # Within the first team's GPUs.
      "${local.teams[0]}-pretrain" = { team = local.teams[0], gpus = local.queues[local.teams[0]].gpus }
      # Beyond them: borrows the second team's idle GPUs.
      "${local.teams[0]}-ablation" = { team = local.teams[0], gpus = local.queues[local.teams[1]].gpus }
      # Beyond the cohort's GPUs: waits suspended.
      "${local.teams[0]}-sweep" = { team = local.teams[0], gpus = local.training.gpus_per_node }
      # Within the second team's GPUs, lent to the first: reclaims them.
      "${local.teams[1]}-pretrain" = { team = local.teams[1], gpus = local.queues[local.teams[1]].gpus }
      } : name => {
      apiVersion = "batch/v1"
      kind       = "Job"
      metadata   = { name = name, namespace = job.team, labels = local.queues[job.team].labels }
      spec = {
        parallelism  = job.gpus / local.training.gpus_per_node
        completions  = job.gpus / local.training.gpus_per_node
        backoffLimit = 0
        template = {
          metadata = {
            labels = { app = name }
            annotations = {
              "pod-complete.stage.kwok.x-k8s.io/delay"        = local.long_running
              "pod-complete.stage.kwok.x-k8s.io/jitter-delay" = local.long_running
            }
          }
          spec = {
            restartPolicy                 = "Never"
            terminationGracePeriodSeconds = local.grace_seconds
            containers                    = [local.container.training]
          }
        }
      }
    }
  }

  inference_deployment = {
    for name, d in {
      chat-api = { replicas = 4, scheduling = local.inference }
      # Inference allowed to borrow training GPUs, preempting training.
      chat-api-overflow = { replicas = 1, scheduling = local.workloads.inference_overflow }
      } : name => {
      apiVersion = "apps/v1"
      kind       = "Deployment"
      metadata   = { name = name, namespace = var.inference_namespace }
      spec = {
        replicas = d.replicas
        selector = { matchLabels = { app = name } }
        template = {
          metadata = { labels = { app = name } }
          spec = {
            terminationGracePeriodSeconds = local.grace_seconds
            priorityClassName             = d.scheduling.priority_class_name
            nodeSelector                  = d.scheduling.node_selector
            tolerations                   = d.scheduling.tolerations
            # One GPU of the fleet it lands on, by that fleet's resource name.
            containers = [merge(local.container.inference, {
              resources = merge(local.container.inference.resources, { limits = { (d.scheduling.gpu_resource) = "1" } })
            })]
          }
        }
      }
    }
  }

  # Each single pod in the namespace of the work it resembles: the fleets
  # refuse pods carrying training's tolerations anywhere but training's (and
  # inference's) namespace.
  single_pod_spec = {
    # Tolerates no taint: lands on the CPU-only fleet.
    report-builder = {
      namespace = var.training_namespace
      spec = {
        containers = [{
          name      = "report-builder"
          image     = "registry.example/report-builder:1"
          resources = { requests = { cpu = "1", memory = "2Gi" } }
        }]
      }
    }
    # Asks for a GPU but tolerates no taint: no node may take it.
    stray-gpu-pod = {
      namespace = var.inference_namespace
      spec = {
        containers = [merge(local.container.inference, { name = "stray" })]
      }
    }
    # Wants a 1-GPU node of the 8-GPU training fleet: no instance type can be both.
    one-gpu-on-training = {
      namespace = var.training_namespace
      spec = {
        nodeSelector = merge(local.training.node_selector, { (local.training.gpu_count_label) = "1" })
        tolerations  = local.training.tolerations
        containers   = [merge(local.container.inference, { name = "one-gpu-on-training" })]
      }
    }
    # No priority class (priority 0) on training GPUs: a training pod could
    # preempt it, but training never preempts.
    notebook = {
      namespace = var.training_namespace
      spec = {
        nodeSelector = local.training.node_selector
        tolerations  = local.training.tolerations
        containers   = [merge(local.container.training, { name = "notebook" })]
      }
    }
  }
  single_pod = {
    for name, pod in local.single_pod_spec : name => {
      apiVersion = "v1"
      kind       = "Pod"
      metadata   = { name = name, namespace = pod.namespace, labels = { app = name } }
      spec       = merge({ terminationGracePeriodSeconds = local.grace_seconds }, pod.spec)
    }
  }
}

# The scenario in steps, each a Kubernetes List for `kubectl apply -f -`.

output "placement" {
  description = "Step 1: the seed's workloads and the pods that must find no node."
  value = jsonencode({
    apiVersion = "v1"
    kind       = "List"
    items = concat([
      { apiVersion = "v1", kind = "Namespace", metadata = { name = var.training_namespace } },
      { apiVersion = "v1", kind = "Namespace", metadata = { name = var.inference_namespace } },
      local.training_job["finetune-llm"],
      local.inference_deployment["chat-api"],
      local.training_job["eval-on-server"],
      local.single_pod["report-builder"],
      local.single_pod["stray-gpu-pod"],
      local.single_pod["one-gpu-on-training"],
    ], local.spot_training == null ? [] : [local.training_job["hparam-search"]])
  })
}

output "fill_training_fleet" {
  description = "Step 2 (after finetune-llm succeeded): training and a notebook fill the training fleet to its GPU limit."
  value       = jsonencode({ apiVersion = "v1", kind = "List", items = [local.training_job["pretrain-70b"], local.single_pod["notebook"]] })
}

output "sweep" {
  description = "Step 3: one more training Job, beyond the limit: it waits and preempts nothing."
  value       = jsonencode({ apiVersion = "v1", kind = "List", items = [local.training_job["sweep-lr"]] })
}

output "overflow" {
  description = "Step 4 (after the notebook ended): inference overflowing onto the full training fleet preempts training."
  value       = jsonencode({ apiVersion = "v1", kind = "List", items = [local.inference_deployment["chat-api-overflow"]] })
}

output "queues_within_quota" {
  description = "Queues (training_teams, on an empty training fleet): the first team's job within its GPUs (empty without two teams)."
  value = jsonencode({
    apiVersion = "v1"
    kind       = "List"
    items      = [for job in local.queued_job : job if job.metadata.name == "${try(local.teams[0], "")}-pretrain"]
  })
}

output "queues_borrow" {
  description = "Queues, once that is admitted: the first team's job beyond its GPUs, borrowing the second team's idle ones (empty without two teams)."
  value = jsonencode({
    apiVersion = "v1"
    kind       = "List"
    items      = [for job in local.queued_job : job if job.metadata.name == "${try(local.teams[0], "")}-ablation"]
  })
}

output "queues_beyond_cohort" {
  description = "Queues, once both are admitted: one more of the first team's jobs, beyond the cohort's GPUs (empty without two teams)."
  value = jsonencode({
    apiVersion = "v1"
    kind       = "List"
    items      = [for job in local.queued_job : job if job.metadata.name == "${try(local.teams[0], "")}-sweep"]
  })
}

output "queues_reclaim" {
  description = "Queues, then: the second team's job, within its GPUs, which the first team borrowed (empty without two teams)."
  value = jsonencode({
    apiVersion = "v1"
    kind       = "List"
    items      = [for job in local.queued_job : job if job.metadata.name == "${try(local.teams[1], "")}-pretrain"]
  })
}
