# No kubeconfig: the API server and its CA come from elsewhere (here, the
# outputs of the module that made an EKS cluster), and a credential plugin
# supplies a short-lived token on every run.
variable "cluster_endpoint" {
  type = string
}

variable "cluster_ca_certificate" {
  description = "PEM CA certificate of the API server."
  type        = string
}

provider "gpufleet" {
  alias = "eks"

  host                   = var.cluster_endpoint
  cluster_ca_certificate = var.cluster_ca_certificate
  exec = {
    api_version = "client.authentication.k8s.io/v1beta1"
    command     = "aws"
    args        = ["eks", "get-token", "--cluster-name", "gpu"]
  }
  label_scheme = "aws"
}
