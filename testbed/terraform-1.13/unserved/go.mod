// Our stand-in for Terraform's unpublished backend modules (see backend.go);
// its path sits under Terraform's so that it may use Terraform's internal
// packages, as the modules it replaces do.
module github.com/hashicorp/terraform/internal/backend/remote-state/unserved

go 1.24.5

require (
	github.com/hashicorp/terraform v1.13.3
	github.com/zclconf/go-cty v1.16.3
)
