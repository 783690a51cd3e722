//! Sequential call latency on both networks the plugin serves on, with the
//! writes grpc-go makes (each request with a PING) and AutoMTLS, in-process:
//! what choosing a unix socket over TCP (with TCP_NODELAY) buys per call.

use std::sync::Arc;
use std::time::Instant;

use gpufleet::framework::FrameworkProvider;
use gpufleet::protocol::handshake::Environment;
use gpufleet::protocol::listener::Network;
use gpufleet::protocol::server::PluginServer;
use gpufleet::provider::Gpufleet;
use serde::Serialize;

use common::pinging_client::{self, PingingClient};

#[derive(Serialize, Clone)]
pub(crate) struct Latency {
    pub(crate) network: &'static str,
    pub(crate) calls: usize,
    pub(crate) median_us: f64,
    pub(crate) p90_us: f64,
    pub(crate) p99_us: f64,
}

pub(crate) async fn compare(calls: usize) -> Vec<Latency> {
    let mut results = Vec::new();
    // Alternate so that a busy moment does not favour one network.
    for round in 0..4 {
        for network in [Network::Tcp, Network::Unix] {
            let micros = measure(network, calls / 4).await;
            if round == 0 {
                results.push((network, Vec::new()));
            }
            results
                .iter_mut()
                .find(|(n, _)| *n == network)
                .unwrap()
                .1
                .extend(micros);
        }
    }
    results
        .into_iter()
        .map(|(network, mut micros)| {
            micros.sort_by(f64::total_cmp);
            let at = |q: f64| micros[((micros.len() as f64 * q) as usize).min(micros.len() - 1)];
            Latency {
                network: network.as_str(),
                calls: micros.len(),
                median_us: at(0.5),
                p90_us: at(0.9),
                p99_us: at(0.99),
            }
        })
        .collect()
}

async fn measure(network: Network, calls: usize) -> Vec<f64> {
    let (cert, key) = client_certificate();
    let env = Environment {
        client_cert: Some(cert.clone()),
        min_port: 10000,
        max_port: 25000,
        unix_socket_dir: None,
        unix_socket_group: None,
    };
    let server = PluginServer::bind_on(&env, network).await.unwrap();
    let line = server.handshake_line().unwrap();
    let address = line.split('|').nth(3).unwrap().to_string();
    let server_cert = server.server_certificate_der().unwrap().to_vec();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(
        server.serve(Arc::new(FrameworkProvider::new(Gpufleet)), async {
            let _ = stopped.await;
        }),
    );
    let check = b"\x0a\x06plugin";
    let micros = match network {
        Network::Tcp => {
            let tcp = tokio::net::TcpStream::connect(&address).await.unwrap();
            tcp.set_nodelay(true).unwrap();
            let tls = pinging_client::tls(tcp, &server_cert, &cert, &key)
                .await
                .unwrap();
            calls_on(PingingClient::handshake(tls).await.unwrap(), check, calls).await
        }
        Network::Unix => {
            let unix = tokio::net::UnixStream::connect(&address).await.unwrap();
            let tls = pinging_client::tls(unix, &server_cert, &cert, &key)
                .await
                .unwrap();
            calls_on(PingingClient::handshake(tls).await.unwrap(), check, calls).await
        }
    };
    let _ = stop.send(());
    let _ = serving.await;
    micros
}

async fn calls_on<S>(mut client: PingingClient<S>, message: &[u8], calls: usize) -> Vec<f64>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut micros = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        let answer = client
            .unary("/grpc.health.v1.Health/Check", message)
            .await
            .unwrap();
        micros.push(started.elapsed().as_secs_f64() * 1e6);
        assert_eq!(answer, [0x08, 0x01], "health check answer");
    }
    micros
}

/// A client certificate like the one go-plugin makes for Terraform.
fn client_certificate() -> (String, String) {
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
}
