// Package cos stands in for Terraform's "cos" state backend (see unserved).
package cos

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/backend/remote-state/unserved"
)

// New is what Terraform's backend registry calls for a "cos" backend block.
func New() backend.Backend { return unserved.Backend{Name: "cos"} }
