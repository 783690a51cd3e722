// Package kubernetes stands in for Terraform's "kubernetes" state backend (see unserved).
package kubernetes

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/backend/remote-state/unserved"
)

// New is what Terraform's backend registry calls for a "kubernetes" backend block.
func New() backend.Backend { return unserved.Backend{Name: "kubernetes"} }
