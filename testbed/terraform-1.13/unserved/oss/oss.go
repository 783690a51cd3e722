// Package oss stands in for Terraform's "oss" state backend (see unserved).
package oss

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/backend/remote-state/unserved"
)

// New is what Terraform's backend registry calls for a "oss" backend block.
func New() backend.Backend { return unserved.Backend{Name: "oss"} }
