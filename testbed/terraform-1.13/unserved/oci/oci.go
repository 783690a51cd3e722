// Package oci stands in for Terraform's "oci" state backend (see unserved).
package oci

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/backend/remote-state/unserved"
)

// New is what Terraform's backend registry calls for a "oci" backend block.
func New() backend.Backend { return unserved.Backend{Name: "oci"} }
