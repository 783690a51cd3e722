//! The Terraform plugin protocol (version 6) over gRPC: handshake, AutoMTLS,
//! values and their encodings, schemas, diagnostics and the gRPC service.
//! Nothing here knows about GPUs or Kubernetes.

pub mod codec;
pub mod diagnostics;
pub mod handshake;
pub mod listener;
pub mod proto;
pub mod provider;
pub mod schema;
pub mod server;
pub mod service;
pub mod stop;
pub mod tls;
pub mod types;
pub mod value;

pub use diagnostics::{AttributePath, Diagnostic, Diagnostics};
pub use types::Type;
pub use value::Value;
