// Package azure stands in for Terraform's "azurerm" state backend (see unserved).
package azure

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/backend/remote-state/unserved"
)

// New is what Terraform's backend registry calls for a "azurerm" backend block.
func New() backend.Backend { return unserved.Backend{Name: "azurerm"} }
