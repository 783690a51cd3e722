//! A network between the provider and the real API server that loses what
//! a test tells it to: an HTTP proxy in front of `kubectl proxy` (which adds
//! the credentials of the user the provider runs as, see
//! [`provider_kubeconfig`]) that forwards everything, except that for the
//! requests a fault picks it
//! * loses the answer: the request reaches the API server, which acts on
//!   it, and the connection breaks before the answer comes back;
//! * loses the request: the connection breaks before the request is sent on;
//! * goes silent: the request is held and never answered.
//!
//! The provider talks plain HTTP to it (kube speaks HTTP/1.1 without
//! pipelining, so one request at a time per connection).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::{provider_kubeconfig, repo_root};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Loss {
    Answer,
    Request,
    Silence,
}

#[derive(Clone, Debug)]
struct Fault {
    loss: Loss,
    method: String,
    path_contains: String,
    /// How many more requests it takes; `u32::MAX` for all.
    remaining: u32,
}

#[derive(Default)]
struct State {
    fault: Mutex<Option<Fault>>,
    answers_lost: AtomicU32,
    requests_lost: AtomicU32,
    held: AtomicU32,
}

impl State {
    /// The loss for this request, if a fault takes it.
    fn take(&self, method: &str, path: &str) -> Option<Loss> {
        let mut fault = self.fault.lock().unwrap();
        let f = fault.as_mut()?;
        if f.remaining == 0 || f.method != method || !path.contains(&f.path_contains) {
            return None;
        }
        if f.remaining != u32::MAX {
            f.remaining -= 1;
        }
        Some(f.loss)
    }
}

pub struct LossyNetwork {
    state: Arc<State>,
    port: u16,
    kubectl_proxy: Child,
    stop: Arc<AtomicBool>,
    kubeconfig: tempfile::NamedTempFile,
}

impl LossyNetwork {
    /// Starts `kubectl proxy` against the cluster under test, as the
    /// provider's user, and the network in front of it, healthy.
    pub fn start() -> Self {
        let mut kubectl_proxy = Command::new(repo_root().join("target/tools/bin/kubectl"))
            .args(["proxy", "--port=0", "--kubeconfig", &provider_kubeconfig()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl proxy starts");
        let mut line = String::new();
        BufReader::new(kubectl_proxy.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let upstream: u16 = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("kubectl proxy said {line:?}"));

        let state = Arc::new(State::default());
        let stop = Arc::new(AtomicBool::new(false));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(serve(listener, upstream, state, stop));
            });
        }
        let mut kubeconfig = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(
            &mut kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: lossy\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: proxied\n  user: {{}}\ncontexts:\n- name: lossy\n  context:\n    cluster: lossy\n    user: proxied\ncurrent-context: lossy\n"
            )
            .as_bytes(),
        )
        .unwrap();
        Self {
            state,
            port,
            kubectl_proxy,
            stop,
            kubeconfig,
        }
    }

    /// A kubeconfig that reaches the cluster through this network.
    pub fn kubeconfig(&self) -> String {
        self.kubeconfig.path().to_string_lossy().into_owned()
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn set(&self, loss: Loss, method: &str, path_contains: &str, count: u32) {
        *self.state.fault.lock().unwrap() = Some(Fault {
            loss,
            method: method.into(),
            path_contains: path_contains.into(),
            remaining: count,
        });
    }

    /// The next `count` (`u32::MAX`: every) `method` requests whose path
    /// contains `path_contains` reach the API server; their answers are lost.
    pub fn lose_answers(&self, method: &str, path_contains: &str, count: u32) {
        self.set(Loss::Answer, method, path_contains, count);
    }

    /// Those requests are lost before they reach the API server.
    pub fn lose_requests(&self, method: &str, path_contains: &str, count: u32) {
        self.set(Loss::Request, method, path_contains, count);
    }

    /// Those requests are held and never answered.
    pub fn go_silent(&self, method: &str, path_contains: &str) {
        self.set(Loss::Silence, method, path_contains, u32::MAX);
    }

    /// No more faults; held requests stay held until their client gives up.
    pub fn heal(&self) {
        *self.state.fault.lock().unwrap() = None;
    }

    pub fn answers_lost(&self) -> u32 {
        self.state.answers_lost.load(Ordering::Relaxed)
    }

    pub fn requests_lost(&self) -> u32 {
        self.state.requests_lost.load(Ordering::Relaxed)
    }

    pub fn requests_held(&self) -> u32 {
        self.state.held.load(Ordering::Relaxed)
    }
}

impl Drop for LossyNetwork {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.kubectl_proxy.kill();
        let _ = self.kubectl_proxy.wait();
    }
}

async fn serve(
    listener: std::net::TcpListener,
    upstream: u16,
    state: Arc<State>,
    stop: Arc<AtomicBool>,
) {
    let listener = TcpListener::from_std(listener).unwrap();
    while !stop.load(Ordering::Relaxed) {
        let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
        let Ok(Ok((client, _))) = accepted else {
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            if let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await {
                connection(client, server, state).await;
            }
        });
    }
}

/// One request from `client`: its head and body, with its method and path.
async fn read_request(
    client: &mut tokio::net::tcp::OwnedReadHalf,
    buffer: &mut Vec<u8>,
) -> Option<(Vec<u8>, String, String)> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let mut chunk = [0u8; 8192];
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut request_line = head.lines().next()?.split(' ');
    let (method, path) = (
        request_line.next()?.to_string(),
        request_line.next()?.to_string(),
    );
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.trim().parse().unwrap());
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "the lossy network reads only requests with a Content-Length"
    );
    while buffer.len() < head_end + length {
        let mut chunk = [0u8; 8192];
        let n = client.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let request: Vec<u8> = buffer.drain(..head_end + length).collect();
    Some((request, method, path))
}

async fn connection(client: TcpStream, server: TcpStream, state: Arc<State>) {
    let (mut client_in, mut client_out) = client.into_split();
    let (mut server_in, mut server_out) = server.into_split();
    // Answers flow back unless muted; once muted, the first byte of the
    // answer says the server has acted on the request.
    let muted = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(tokio::sync::Notify::new());
    let answers = {
        let (muted, answered) = (muted.clone(), answered.clone());
        tokio::spawn(async move {
            let mut chunk = [0u8; 16384];
            loop {
                let n = match server_in.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                if muted.load(Ordering::Relaxed) {
                    answered.notify_one();
                    continue;
                }
                if client_out.write_all(&chunk[..n]).await.is_err() {
                    return;
                }
            }
        })
    };
    let mut buffer = Vec::new();
    while let Some((request, method, path)) = read_request(&mut client_in, &mut buffer).await {
        match state.take(&method, &path) {
            None => {
                if server_out.write_all(&request).await.is_err() {
                    break;
                }
            }
            Some(Loss::Answer) => {
                muted.store(true, Ordering::Relaxed);
                if server_out.write_all(&request).await.is_ok() {
                    let _ =
                        tokio::time::timeout(Duration::from_secs(10), answered.notified()).await;
                }
                state.answers_lost.fetch_add(1, Ordering::Relaxed);
                break;
            }
            Some(Loss::Request) => {
                state.requests_lost.fetch_add(1, Ordering::Relaxed);
                break;
            }
            Some(Loss::Silence) => {
                state.held.fetch_add(1, Ordering::Relaxed);
                // Held until the client gives up and closes the connection.
                let mut rest = [0u8; 1024];
                while matches!(client_in.read(&mut rest).await, Ok(n) if n > 0) {}
                break;
            }
        }
    }
    answers.abort();
}
