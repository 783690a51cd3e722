//! One module per data source: its schema, what it reads, and its unit
//! tests.

pub mod accelerators;
