//! Stands in for the kubelet of `make demo`'s self-managed GPU server: joins
//! the cluster with a `gpufleet_node_join`'s material, as a kubelet's TLS
//! bootstrap does (the scenario test's own code, test-support's
//! tls_bootstrap): token discovery of the CA against the pin, a node client
//! certificate signed by the controller-manager, and the server's Node
//! registered with it, tainted and labelled from its first moment.
//!
//!   terraform output -json training_server_join | simulated-server-join NODE.json
//!
//! NODE.json is the server as its kubelet would report it (name, labels,
//! annotations, status); kwok runs the Node once it has registered.

use std::io::Read;

use common::tls_bootstrap::{self, JoinMaterial};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Some(manifest) = std::env::args().nth(1) else {
        eprintln!("usage: simulated-server-join NODE.json < JOIN_MATERIAL.json");
        std::process::exit(2);
    };
    let server = std::fs::read_to_string(&manifest).expect("the server's Node manifest");
    let server = serde_json::from_str(&server).expect("a Node");
    let mut material = String::new();
    std::io::stdin()
        .read_to_string(&mut material)
        .expect("the join material on stdin");
    let material = JoinMaterial::of(&serde_json::from_str(&material).expect("JSON"));
    let csr = tls_bootstrap::join(&material, &server).await;
    println!("joined with the certificate of CertificateSigningRequest {csr}");
}
