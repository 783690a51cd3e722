// Package unserved stands in for the state backends of Terraform v1.13.3
// that upstream keeps in nested Go modules of its repository (azurerm,
// consul, cos, gcs, kubernetes, oci, oss, pg, s3). Those modules are never
// published, so the Go module proxy cannot serve them and the published root
// module does not build without a replacement. The tests keep state in local
// files; configuring one of these backends fails with a diagnostic saying so.
package unserved

import (
	"fmt"

	"github.com/hashicorp/terraform/internal/configs/configschema"
	"github.com/hashicorp/terraform/internal/states/statemgr"
	"github.com/hashicorp/terraform/internal/tfdiags"
	"github.com/zclconf/go-cty/cty"
)

// Backend is a state backend left out of this build.
type Backend struct {
	// Name is the backend's name in a `backend` block, e.g. "s3".
	Name string
}

func (b Backend) err() error {
	return fmt.Errorf("the %q state backend is not part of this Terraform build, made for gpufleet's tests (testbed/terraform-1.13)", b.Name)
}

func (b Backend) diags() tfdiags.Diagnostics {
	var diags tfdiags.Diagnostics
	return diags.Append(b.err())
}

func (b Backend) ConfigSchema() *configschema.Block { return &configschema.Block{} }

func (b Backend) PrepareConfig(v cty.Value) (cty.Value, tfdiags.Diagnostics) { return v, b.diags() }

func (b Backend) Configure(cty.Value) tfdiags.Diagnostics { return b.diags() }

func (b Backend) StateMgr(string) (statemgr.Full, error) { return nil, b.err() }

func (b Backend) DeleteWorkspace(string, bool) error { return b.err() }

func (b Backend) Workspaces() ([]string, error) { return nil, b.err() }
