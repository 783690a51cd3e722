//! One module per resource: its schema, its mapping to API objects, and its
//! unit tests; `taint` holds the taint attributes fleets and node taints
//! share, `sharing` what the three GPU-sharing resources share.

pub mod fleet;
pub mod gpu_sharing;
pub mod node_join;
pub mod node_sharing;
pub mod node_taint;
pub mod priority_class;
pub mod queue;
pub mod sharing;
pub mod taint;
