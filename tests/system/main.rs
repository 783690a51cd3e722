//! The system tier: the seed scenario on the whole control plane with
//! Karpenter, and the suites that stress the provider as a whole: faults
//! (on a control plane of their own), partial failures, foreign writers,
//! least privilege and the request budget. Tests run side by side; the
//! request budget counts the shared API server's requests, so it runs
//! while no other test sends any (`common::exclusive`).

mod conflicts;
mod faults;
mod least_privilege;
mod partial_failure;
mod request_budget;
mod scenario;
