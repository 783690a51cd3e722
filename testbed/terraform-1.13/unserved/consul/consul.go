// Package consul stands in for Terraform's "consul" state backend (see unserved).
package consul

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/backend/remote-state/unserved"
)

// New is what Terraform's backend registry calls for a "consul" backend block.
func New() backend.Backend { return unserved.Backend{Name: "consul"} }
