resource "gpufleet_fleet" "inference" {
  name                       = "__NAME__"
  node_class                 = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
  accelerators               = ["L4", "L40S"]
  accelerator_count          = { max = 1 }
  accelerator_memory_min_gib = 24
  capacity_types             = ["spot", "on-demand"]
  zones                      = ["europe-central-1a", "europe-central-1b"]
  min_values                 = { accelerators = 2 }
  weight                     = 50
  labels                     = { workload = "inference" }
  annotations                = { "example.com/cost-center" = "serving" }
  taints                     = [{ key = "workload", value = "inference", effect = "NoSchedule" }]
  startup_taints             = [{ key = "node.cilium.io/agent-not-ready", value = "true", effect = "NoExecute" }]
  limits                     = { gpus = 16 }
}
