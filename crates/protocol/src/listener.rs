//! Where the plugin listens, as the handshake line names it: a unix socket
//! (what go-plugin servers use everywhere but Windows) or a TCP port on
//! 127.0.0.1 within the client's range. Accepted TCP connections get
//! `TCP_NODELAY`: without it, every answer whose last frame is written
//! separately waits for the client's delayed ACK, about 40 ms per call.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::{Stream, StreamExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

use super::handshake::Environment;

/// The two networks go-plugin clients accept in the handshake line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    /// A port on 127.0.0.1.
    Tcp,
    /// A unix domain socket.
    Unix,
}

impl Network {
    /// The network's name in the handshake line: `tcp` or `unix`.
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Tcp => "tcp",
            Network::Unix => "unix",
        }
    }
}

/// Why the plugin cannot listen.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// Every port in the client's range (lowest, highest) is taken.
    #[error("no free port between {0} and {1} on 127.0.0.1")]
    NoFreePort(u16, u16),
    /// No socket can be bound in the socket directory.
    #[error("cannot create a unix socket in {dir}: {source}")]
    UnixSocket {
        /// The directory the socket was to be created in.
        dir: String,
        /// The error binding it.
        source: std::io::Error,
    },
    /// The socket cannot be given to the requested group (the group, why).
    #[error("PLUGIN_UNIX_SOCKET_GROUP={0:?}: {1}")]
    SocketGroup(String, String),
    /// Reading the bound listener's local address failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A bound listener of either network.
pub(crate) enum Listener {
    /// Listening on a port of 127.0.0.1.
    Tcp(TcpListener),
    /// Listening on a unix socket, whose file goes when this is dropped.
    Unix {
        listener: UnixListener,
        socket: SocketFile,
    },
}

impl Listener {
    /// Listens on `network` where the client's environment allows.
    pub(crate) async fn bind(env: &Environment, network: Network) -> Result<Self, ListenError> {
        match network {
            Network::Tcp => bind_tcp(env).await,
            Network::Unix => bind_unix(env),
        }
    }

    /// The network, as the handshake line names it.
    pub(crate) fn network(&self) -> Network {
        match self {
            Listener::Tcp(_) => Network::Tcp,
            Listener::Unix { .. } => Network::Unix,
        }
    }

    /// The address as the handshake line carries it: `127.0.0.1:PORT` or the socket path.
    pub(crate) fn address(&self) -> Result<String, ListenError> {
        Ok(match self {
            Listener::Tcp(listener) => listener.local_addr()?.to_string(),
            Listener::Unix { socket, .. } => socket.path.to_string_lossy().into_owned(),
        })
    }
}

async fn bind_tcp(env: &Environment) -> Result<Listener, ListenError> {
    for port in env.min_port..=env.max_port {
        if let Ok(listener) = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).await {
            return Ok(Listener::Tcp(listener));
        }
    }
    Err(ListenError::NoFreePort(env.min_port, env.max_port))
}

/// A fresh socket in PLUGIN_UNIX_SOCKET_DIR (else the temporary directory),
/// given to PLUGIN_UNIX_SOCKET_GROUP with group write access when the client
/// asks for that, as go-plugin servers do.
fn bind_unix(env: &Environment) -> Result<Listener, ListenError> {
    static ATTEMPT: AtomicU32 = AtomicU32::new(0);
    let dir = env
        .unix_socket_dir
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    let failed = |source| ListenError::UnixSocket {
        dir: dir.display().to_string(),
        source,
    };
    let pid = std::process::id();
    let (listener, path) = loop {
        let n = ATTEMPT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("plugin-gpufleet-{pid}-{n}"));
        match UnixListener::bind(&path) {
            Ok(listener) => break (listener, path),
            // Left behind by an earlier process with our pid.
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && n < 100 => continue,
            Err(e) => return Err(failed(e)),
        }
    };
    let socket = SocketFile { path };
    if let Some(group) = &env.unix_socket_group {
        let gid = group_id(
            group,
            &std::fs::read_to_string("/etc/group").unwrap_or_default(),
        )
        .map_err(|e| ListenError::SocketGroup(group.clone(), e))?;
        std::os::unix::fs::chown(&socket.path, None, Some(gid))
            .and_then(|()| {
                std::fs::set_permissions(&socket.path, std::fs::Permissions::from_mode(0o660))
            })
            .map_err(|e| ListenError::SocketGroup(group.clone(), e.to_string()))?;
    }
    Ok(Listener::Unix { listener, socket })
}

/// A group given by number, or by name as /etc/group lists it.
fn group_id(group: &str, etc_group: &str) -> Result<u32, String> {
    if let Ok(gid) = group.parse() {
        return Ok(gid);
    }
    etc_group
        .lines()
        .map(|line| line.split(':').collect::<Vec<_>>())
        .find(|fields| fields.len() >= 3 && fields[0] == group)
        .and_then(|fields| fields[2].parse().ok())
        .ok_or_else(|| "no such group in /etc/group".to_string())
}

/// The socket's path, removed when the server stops.
pub(crate) struct SocketFile {
    path: PathBuf,
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Accepted TCP connections, each with `TCP_NODELAY` set.
pub(crate) fn tcp_connections(
    listener: TcpListener,
) -> impl Stream<Item = std::io::Result<TcpStream>> + Send + 'static {
    tokio_stream::wrappers::TcpListenerStream::new(listener).map(|accepted| {
        accepted.inspect(|stream| {
            if let Err(e) = stream.set_nodelay(true) {
                tracing::warn!("cannot set TCP_NODELAY; calls may stall: {e}");
            }
        })
    })
}

/// Accepted unix socket connections.
pub(crate) fn unix_connections(
    listener: UnixListener,
) -> impl Stream<Item = std::io::Result<UnixStream>> + Send + 'static {
    tokio_stream::wrappers::UnixListenerStream::new(listener)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn env(dir: Option<&Path>, group: Option<&str>) -> Environment {
        Environment {
            client_cert: None,
            min_port: 0,
            max_port: 0,
            unix_socket_dir: dir.map(Path::to_path_buf),
            unix_socket_group: group.map(str::to_string),
        }
    }

    #[tokio::test]
    async fn unix_socket_lives_in_the_given_directory_until_the_server_stops() {
        let dir = std::env::temp_dir().join(format!("gpufleet-listener-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let listener = Listener::bind(&env(Some(&dir), None), Network::Unix)
            .await
            .unwrap();
        assert_eq!(listener.network(), Network::Unix);
        let path = PathBuf::from(listener.address().unwrap());
        assert_eq!(path.parent(), Some(dir.as_path()));
        assert!(UnixStream::connect(&path).await.is_ok());
        drop(listener);
        assert!(!path.exists(), "socket file left behind");
        std::fs::remove_dir(&dir).unwrap();
    }

    #[tokio::test]
    async fn unix_socket_goes_to_the_requested_group() {
        let dir = std::env::temp_dir().join(format!("gpufleet-group-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let own_gid = std::os::unix::fs::MetadataExt::gid(&std::fs::metadata(&dir).unwrap());
        let listener = Listener::bind(&env(Some(&dir), Some(&own_gid.to_string())), Network::Unix)
            .await
            .unwrap();
        let meta = std::fs::metadata(listener.address().unwrap()).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o660);
        drop(listener);
        let bad = Listener::bind(&env(Some(&dir), Some("no-such-group-here")), Network::Unix).await;
        assert!(matches!(bad, Err(ListenError::SocketGroup(..))));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn accepted_tcp_connections_send_without_delay() {
        let Listener::Tcp(listener) = Listener::bind(&env(None, None), Network::Tcp)
            .await
            .unwrap()
        else {
            unreachable!()
        };
        let address = listener.local_addr().unwrap();
        let mut connections = Box::pin(tcp_connections(listener));
        let _client = TcpStream::connect(address).await.unwrap();
        let accepted = connections.next().await.unwrap().unwrap();
        assert!(accepted.nodelay().unwrap());
    }

    #[test]
    fn group_names_resolve_through_etc_group() {
        let etc = "root:x:0:\ndocker:x:998:alice,bob\n";
        assert_eq!(group_id("docker", etc), Ok(998));
        assert_eq!(group_id("1234", etc), Ok(1234));
        assert!(group_id("wheel", etc).is_err());
    }

    #[tokio::test]
    async fn tcp_listens_on_loopback_within_the_port_range() {
        let listener = Listener::bind(&env(None, None), Network::Tcp)
            .await
            .unwrap();
        assert_eq!(listener.network(), Network::Tcp);
        assert!(listener.address().unwrap().starts_with("127.0.0.1:"));
        let mut taken = env(None, None);
        let port: u16 = listener
            .address()
            .unwrap()
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        (taken.min_port, taken.max_port) = (port, port);
        assert!(matches!(
            Listener::bind(&taken, Network::Tcp).await,
            Err(ListenError::NoFreePort(..))
        ));
    }
}
