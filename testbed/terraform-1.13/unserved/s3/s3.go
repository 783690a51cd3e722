// Package s3 stands in for Terraform's "s3" state backend (see unserved).
package s3

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/backend/remote-state/unserved"
)

// New is what Terraform's backend registry calls for a "s3" backend block.
func New() backend.Backend { return unserved.Backend{Name: "s3"} }
