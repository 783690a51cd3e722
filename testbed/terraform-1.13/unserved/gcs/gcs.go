// Package gcs stands in for Terraform's "gcs" state backend (see unserved).
package gcs

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/backend/remote-state/unserved"
)

// New is what Terraform's backend registry calls for a "gcs" backend block.
func New() backend.Backend { return unserved.Backend{Name: "gcs"} }
