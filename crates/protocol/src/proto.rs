//! Code generated from `proto/` at build time.
#![allow(clippy::all, clippy::pedantic, missing_docs)]

pub mod tfplugin6 {
    tonic::include_proto!("tfplugin6");
}

pub mod plugin {
    tonic::include_proto!("plugin");
}
