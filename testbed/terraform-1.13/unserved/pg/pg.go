// Package pg stands in for Terraform's "pg" state backend (see unserved).
package pg

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/backend/remote-state/unserved"
)

// New is what Terraform's backend registry calls for a "pg" backend block.
func New() backend.Backend { return unserved.Backend{Name: "pg"} }
