# GPU models that MIG can partition and that have at least 80 GiB, chosen by
# what they offer rather than by name.
data "gpufleet_accelerators" "mig_80" {
  sharing        = "mig"
  min_memory_gib = 80
}

resource "gpufleet_fleet" "partitioned" {
  name         = "partitioned"
  accelerators = [for a in data.gpufleet_accelerators.mig_80.accelerators : a.name]
  # Tells the A100 80GB from the 40GB one, which share a model label.
  accelerator_memory_min_gib = 80
  # Under the provider's default cfke label scheme, which names every one of
  # them (EC2's labels name only the models EC2 sells).
  node_class = { group = "karpenter.kwok.sh", kind = "KWOKNodeClass", name = "default" }
}

output "mig_profiles" {
  value = {
    for a in data.gpufleet_accelerators.mig_80.accelerators : a.name => [for p in a.mig_profiles : p.name]
  }
}
