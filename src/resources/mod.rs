//! One module per resource: its schema, its mapping to API objects, and its
//! unit tests.

pub mod fleet;
pub mod node_taint;
pub mod ownership;
pub mod priority_class;
