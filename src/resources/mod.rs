//! One module per resource: its schema, its mapping to API objects, and its
//! unit tests; `taint` holds the taint attributes fleets and node taints share.

pub mod fleet;
pub mod node_taint;
pub mod priority_class;
pub mod taint;
