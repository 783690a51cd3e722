//! The acceptance tier: each resource and data source (one module each),
//! the plugin protocol, the connection to the cluster and older CLIs,
//! through the real terraform and tofu CLIs against the test cluster
//! (testbed/cluster.sh). Tests run side by side; each works on objects of
//! its own (unique names, namespaces, node labels), and the two that need
//! the cluster's one ClusterPolicy slot take turns (`common::exclusive`).

mod admission;
mod admission_kueue;
mod compat;
mod connection;
mod fleet;
mod mig_strategy;
mod node_join;
mod node_pools;
mod node_taint;
mod prerequisites;
mod priority_class;
mod protocol;
mod queue;
mod sharing;
mod simulated_device_plugin;
mod unshared_default;
