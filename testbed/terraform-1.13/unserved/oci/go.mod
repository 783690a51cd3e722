module github.com/hashicorp/terraform/internal/backend/remote-state/oci

go 1.24.5

require (
	github.com/hashicorp/terraform v1.13.3
	github.com/hashicorp/terraform/internal/backend/remote-state/unserved v0.0.0-00010101000000-000000000000
)
