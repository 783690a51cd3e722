//! The provider binary that Terraform and OpenTofu start.

use std::process::ExitCode;
use std::sync::Arc;

use gpufleet::VERSION;
use gpufleet::framework::FrameworkProvider;
use gpufleet::protocol::handshake::{Environment, PROTOCOL_VERSION};
use gpufleet::protocol::server::PluginServer;
use gpufleet::provider::Gpufleet;

fn main() -> ExitCode {
    // Answered before the plugin contract is checked, so a person or a
    // packaging script can ask which release a binary is.
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("terraform-provider-gpufleet {VERSION} (plugin protocol {PROTOCOL_VERSION})");
        return ExitCode::SUCCESS;
    }
    let env = match Environment::from_vars(|k| std::env::var(k).ok()) {
        Ok(env) => env,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    gpufleet::logging::init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(env)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(env: Environment) -> Result<(), gpufleet::protocol::server::ServeError> {
    gpufleet::protocol::tls::install_crypto_provider();
    ignore_interrupts();
    let server = PluginServer::bind(&env).await?;
    tracing::debug!(
        "terraform-provider-gpufleet {VERSION} serving plugin protocol {PROTOCOL_VERSION} on {} {}",
        server.network().as_str(),
        server.address()?
    );
    // The handshake line must be the first and only thing on stdout.
    println!("{}", server.handshake_line()?);
    let provider = Arc::new(FrameworkProvider::new(Gpufleet));
    server.serve(provider, std::future::pending()).await
}

/// Ctrl-C reaches the whole process group; Terraform then stops us through
/// StopProvider and Shutdown, so dying on SIGINT would cut an apply short.
fn ignore_interrupts() {
    tokio::spawn(async {
        if let Ok(mut interrupts) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        {
            while interrupts.recv().await.is_some() {
                tracing::debug!("ignoring SIGINT; waiting for Terraform to stop the provider");
            }
        }
    });
}
