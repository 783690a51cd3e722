//! The gRPC side: the plugin server with tfplugin6.Provider (see
//! [`super::service`]) on top of a [`Provider`], plus the services go-plugin
//! clients expect (controller, stdio, broker, health).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;
use tonic::codegen::{Service, http};
use tonic::server::NamedService;
use tonic::transport::server::{Connected, Router};
use tonic::{Request, Response, Status, Streaming};

use super::handshake::{Environment, handshake_line};
use super::listener::{ListenError, Listener, Network, tcp_connections, unix_connections};
use super::proto::plugin;
use super::proto::tfplugin6 as pb;
use super::provider::Provider;
use super::service::ProviderService;
use super::tls::{ServerTls, server_tls};

/// terraform-plugin-go's limit; tonic's 4 MiB default is too small for large states.
const MAX_MESSAGE_SIZE: usize = 256 << 20;

/// Why the plugin cannot start serving, or stopped on an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// No socket or port to listen on.
    #[error(transparent)]
    Listen(#[from] ListenError),
    /// AutoMTLS cannot be set up from the client's certificate.
    #[error(transparent)]
    Tls(#[from] super::tls::TlsError),
    /// The gRPC server failed while serving.
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// A bound listener, ready to print its handshake line and serve.
pub struct PluginServer {
    listener: Listener,
    tls: Option<ServerTls>,
}

impl PluginServer {
    /// Listens on a unix socket, as go-plugin servers do on Linux and macOS:
    /// no port to find, no TCP stack, and no Nagle stall whatever a client
    /// does (measured slightly faster than TCP with TCP_NODELAY; see
    /// docs/benchmarks.md). TCP when no socket can be made (the directory is
    /// not writable, or its path is too long for a socket address).
    pub async fn bind(env: &Environment) -> Result<Self, ServeError> {
        match Self::bind_on(env, Network::Unix).await {
            Err(ServeError::Listen(e)) => {
                tracing::warn!("serving on TCP instead of a unix socket: {e}");
                Self::bind_on(env, Network::Tcp).await
            }
            other => other,
        }
    }

    /// Listens on `network` only, with TLS when the client sent a certificate.
    pub async fn bind_on(env: &Environment, network: Network) -> Result<Self, ServeError> {
        let tls = env.client_cert.as_deref().map(server_tls).transpose()?;
        let listener = Listener::bind(env, network).await?;
        Ok(Self { listener, tls })
    }

    /// The network listened on, unix socket or TCP.
    pub fn network(&self) -> Network {
        self.listener.network()
    }

    /// Where the plugin serves: `127.0.0.1:PORT` or a unix socket path.
    pub fn address(&self) -> Result<String, ServeError> {
        Ok(self.listener.address()?)
    }

    /// Our certificate (DER) the client pins; `None` when serving plaintext.
    pub fn server_certificate_der(&self) -> Option<&[u8]> {
        self.tls.as_ref().map(|t| t.certificate_der.as_slice())
    }

    /// The line to print on stdout so the client connects (see
    /// [`handshake_line`]).
    pub fn handshake_line(&self) -> Result<String, ServeError> {
        Ok(handshake_line(
            self.listener.network(),
            &self.listener.address()?,
            self.server_certificate_der(),
        ))
    }

    /// Serves until the client calls `GRPCController.Shutdown` or `stop` resolves.
    pub async fn serve(
        self,
        provider: Arc<dyn Provider>,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let shutdown = Arc::new(Notify::new());
        let (health_reporter, health) = tonic_health::server::health_reporter();
        health_reporter
            .set_service_status("plugin", tonic_health::ServingStatus::Serving)
            .await;

        let router = tonic::transport::Server::builder()
            .add_service(Timed(
                pb::provider_server::ProviderServer::new(ProviderService::new(provider))
                    .max_decoding_message_size(MAX_MESSAGE_SIZE)
                    .max_encoding_message_size(MAX_MESSAGE_SIZE),
            ))
            .add_service(plugin::grpc_controller_server::GrpcControllerServer::new(
                Controller {
                    shutdown: shutdown.clone(),
                },
            ))
            .add_service(plugin::grpc_stdio_server::GrpcStdioServer::new(Stdio))
            .add_service(plugin::grpc_broker_server::GrpcBrokerServer::new(Broker))
            .add_service(health);

        let until = {
            let shutdown = shutdown.clone();
            async move {
                tokio::select! {
                    () = shutdown.notified() => {}
                    () = stop => {}
                }
            }
        };
        match self.listener {
            Listener::Tcp(listener) => {
                serve_connections(router, tcp_connections(listener), self.tls, until).await
            }
            // The socket file goes when serving ends.
            Listener::Unix {
                listener,
                socket: _socket,
            } => serve_connections(router, unix_connections(listener), self.tls, until).await,
        }
    }
}

/// Serves gRPC on `connections`, each one secured by TLS first when AutoMTLS is on.
async fn serve_connections<IO>(
    router: Router,
    connections: impl Stream<Item = std::io::Result<IO>> + Send + 'static,
    tls: Option<ServerTls>,
    until: impl Future<Output = ()>,
) -> Result<(), ServeError>
where
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IO::ConnectInfo: Clone + Send + Sync + 'static,
{
    match tls {
        None => {
            router
                .serve_with_incoming_shutdown(connections, until)
                .await?
        }
        Some(tls) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.config);
            // Handshakes run concurrently; a failed one (e.g. a client
            // without the certificate) is logged and dropped.
            let secured = connections
                .filter_map(|conn| async move { conn.ok() })
                .map(move |conn| {
                    let acceptor = acceptor.clone();
                    async move { acceptor.accept(conn).await }
                })
                .buffer_unordered(16)
                .filter_map(|result| async move {
                    match result {
                        Ok(stream) => Some(Ok::<_, std::io::Error>(stream)),
                        Err(e) => {
                            tracing::warn!("refused a connection: TLS handshake failed: {e}");
                            None
                        }
                    }
                });
            router.serve_with_incoming_shutdown(secured, until).await?
        }
    }
    Ok(())
}

/// The provider service, logging at TRACE how long the provider took over
/// each call (from the request's arrival to its answer, decoding and
/// encoding included): with `TF_LOG_PROVIDER=trace` a slow plan shows
/// where its time goes.
#[derive(Clone)]
struct Timed<S>(S);

impl<S: NamedService> NamedService for Timed<S> {
    const NAME: &'static str = S::NAME;
}

impl<S, B> Service<http::Request<B>> for Timed<S>
where
    S: Service<http::Request<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let timed = tracing::enabled!(tracing::Level::TRACE).then(|| {
            let rpc = request.uri().path().rsplit('/').next().unwrap_or_default();
            (rpc.to_string(), Instant::now())
        });
        let answer = self.0.call(request);
        Box::pin(async move {
            let result = answer.await;
            if let Some((rpc, started)) = timed {
                let micros = started.elapsed().as_micros();
                tracing::trace!(rpc, micros, "rpc served");
            }
            result
        })
    }
}

struct Controller {
    shutdown: Arc<Notify>,
}

#[tonic::async_trait]
impl plugin::grpc_controller_server::GrpcController for Controller {
    async fn shutdown(&self, _: Request<plugin::Empty>) -> Result<Response<plugin::Empty>, Status> {
        tracing::debug!("client asked the plugin to shut down");
        self.shutdown.notify_one();
        Ok(Response::new(plugin::Empty {}))
    }
}

/// A stream a streaming call answers with.
pub(super) type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

struct Stdio;

#[tonic::async_trait]
impl plugin::grpc_stdio_server::GrpcStdio for Stdio {
    type StreamStdioStream = BoxStream<plugin::StdioData>;
    async fn stream_stdio(
        &self,
        _: Request<()>,
    ) -> Result<Response<Self::StreamStdioStream>, Status> {
        // Logs go to stderr directly, which the client reads line by line.
        Ok(Response::new(Box::pin(futures::stream::pending())))
    }
}

struct Broker;

#[tonic::async_trait]
impl plugin::grpc_broker_server::GrpcBroker for Broker {
    type StartStreamStream = BoxStream<plugin::ConnInfo>;
    async fn start_stream(
        &self,
        request: Request<Streaming<plugin::ConnInfo>>,
    ) -> Result<Response<Self::StartStreamStream>, Status> {
        let mut inbound = request.into_inner();
        tokio::spawn(async move { while let Some(Ok(_)) = inbound.next().await {} });
        Ok(Response::new(Box::pin(futures::stream::pending())))
    }
}
