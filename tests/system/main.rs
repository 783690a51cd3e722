//! The system tier: the seed scenario on the whole control plane with
//! Karpenter, and the suites that stress the provider as a whole: faults
//! (on a control plane of their own), partial failures, foreign writers,
//! least privilege and the request budget. Tests run side by side; those
//! that need the cluster's one ClusterPolicy take turns
//! (`common::exclusive`). The request budget counts only its own
//! provider's requests (`common::audit`), so it runs beside the others.

mod conflicts;
mod faults;
mod least_privilege;
mod partial_failure;
mod request_budget;
mod scenario;
