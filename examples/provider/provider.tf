terraform {
  required_providers {
    gpufleet = {
      source  = "gpufleet/gpufleet"
      version = "~> 0.1"
    }
  }
}

# A kubeconfig and one of its contexts. Without config_path the provider reads
# the file named by KUBE_CONFIG_PATH, else the first file in KUBECONFIG; without
# config_context, that file's current context.
provider "gpufleet" {
  config_path    = "~/.kube/config"
  config_context = "gpu-cluster"

  # How GPU constraints become node requirements: "cfke" (the default) uses
  # the cfke.io/accelerator-* labels, "aws" and "azure" those clouds'
  # Karpenter labels. A fleet can override it.
  label_scheme = "aws"
}
