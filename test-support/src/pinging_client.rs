//! A minimal HTTP/2 gRPC client that writes what grpc-go's client (inside
//! Terraform and OpenTofu) writes for a unary call: the request's HEADERS
//! and DATA together with an HTTP/2 PING, in one write. grpc-go pings that
//! way to estimate bandwidth-delay; the server answers the PING at once, and
//! a server socket without TCP_NODELAY then holds the gRPC answer back until
//! the client's delayed ACK of that PING ACK arrives, ~40 ms later. Tonic's
//! own client does not ping per call, so it cannot show that stall.
//!
//! It speaks over any stream (TCP or unix socket, with or without TLS),
//! uses only literal HPACK fields, and reads answers without decoding their
//! headers: enough to time calls, not a general client.

use std::io::{Error, ErrorKind, Result};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, pem::PemObject};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0x0;
const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

pub struct PingingClient<S> {
    io: S,
    next_stream: u32,
    pings: u64,
}

/// mTLS the way go-plugin's client does it: our certificate, the server's
/// pinned as the only root, server name `localhost`, ALPN `h2`.
pub async fn tls<S: AsyncRead + AsyncWrite + Unpin>(
    io: S,
    server_cert_der: &[u8],
    client_cert_pem: &str,
    client_key_pem: &str,
) -> Result<tokio_rustls::client::TlsStream<S>> {
    let invalid = |e: &dyn std::fmt::Display| Error::new(ErrorKind::InvalidInput, e.to_string());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(server_cert_der.to_vec()))
        .map_err(|e| invalid(&e))?;
    let cert =
        CertificateDer::from_pem_slice(client_cert_pem.as_bytes()).map_err(|e| invalid(&e))?;
    let key = PrivateKeyDer::from_pem_slice(client_key_pem.as_bytes()).map_err(|e| invalid(&e))?;
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| invalid(&e))?
    .with_root_certificates(roots)
    .with_client_auth_cert(vec![cert], key)
    .map_err(|e| invalid(&e))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), io)
        .await
}

impl<S: AsyncRead + AsyncWrite + Unpin> PingingClient<S> {
    /// Connection preface and SETTINGS exchange.
    pub async fn handshake(mut io: S) -> Result<Self> {
        let mut hello = PREFACE.to_vec();
        frame(&mut hello, SETTINGS, 0, 0, &[]);
        io.write_all(&hello).await?;
        let mut client = Self {
            io,
            next_stream: 1,
            pings: 0,
        };
        loop {
            let (kind, flags, _, _) = client.read_frame().await?;
            if kind == SETTINGS && flags & ACK == 0 {
                let mut ack = Vec::new();
                frame(&mut ack, SETTINGS, ACK, 0, &[]);
                client.io.write_all(&ack).await?;
                return Ok(client);
            }
        }
    }

    /// One unary call to `path` (`/package.Service/Method`) with a protobuf
    /// `message`; returns the answer's message bytes.
    pub async fn unary(&mut self, path: &str, message: &[u8]) -> Result<Vec<u8>> {
        let stream = self.next_stream;
        self.next_stream += 2;
        let mut headers = Vec::new();
        for (name, value) in [
            (":method", "POST"),
            (":scheme", "https"),
            (":path", path),
            (":authority", "localhost"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ] {
            literal(&mut headers, name, value);
        }
        let mut body = vec![0];
        body.extend_from_slice(&(message.len() as u32).to_be_bytes());
        body.extend_from_slice(message);
        self.pings += 1;
        let mut out = Vec::new();
        frame(&mut out, HEADERS, END_HEADERS, stream, &headers);
        frame(&mut out, DATA, END_STREAM, stream, &body);
        frame(&mut out, PING, 0, 0, &self.pings.to_be_bytes());
        self.io.write_all(&out).await?;

        let mut answer = Vec::new();
        loop {
            let (kind, flags, id, payload) = self.read_frame().await?;
            match kind {
                GOAWAY => return Err(Error::other("server sent GOAWAY")),
                SETTINGS if flags & ACK == 0 => {
                    let mut ack = Vec::new();
                    frame(&mut ack, SETTINGS, ACK, 0, &[]);
                    self.io.write_all(&ack).await?;
                }
                PING if flags & ACK == 0 => {
                    let mut ack = Vec::new();
                    frame(&mut ack, PING, ACK, 0, &payload);
                    self.io.write_all(&ack).await?;
                }
                DATA if id == stream => answer.extend_from_slice(&payload),
                _ => {}
            }
            if id == stream && flags & END_STREAM != 0 && matches!(kind, DATA | HEADERS) {
                break;
            }
        }
        // A gRPC message: compression flag, 4-byte length, bytes.
        if answer.len() < 5 {
            return Err(Error::other("the call ended without an answer message"));
        }
        Ok(answer[5..].to_vec())
    }

    async fn read_frame(&mut self) -> Result<(u8, u8, u32, Vec<u8>)> {
        let mut head = [0u8; 9];
        self.io.read_exact(&mut head).await?;
        let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let id = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0; length];
        self.io.read_exact(&mut payload).await?;
        Ok((head[3], head[4], id, payload))
    }
}

fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
    out.extend_from_slice(payload);
}

/// HPACK "literal header field without indexing, new name", no Huffman;
/// names and values here are shorter than 127 bytes.
fn literal(out: &mut Vec<u8>, name: &str, value: &str) {
    assert!(name.len() < 127 && value.len() < 127);
    out.push(0);
    out.push(name.len() as u8);
    out.extend_from_slice(name.as_bytes());
    out.push(value.len() as u8);
    out.extend_from_slice(value.as_bytes());
}
