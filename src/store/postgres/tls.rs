//! TLS to Postgres, on rustls (with the `ring` provider, as the HTTP
//! transport), as libpq's `sslmode` asks.
//!
//! `tokio-postgres` parses `sslmode` `disable`, `prefer` and `require`
//! only, and refuses every option it does not know; so the connection
//! string is read here first: `sslmode` (with `verify-ca` and
//! `verify-full`) and `sslrootcert` are taken out and kept, the rest goes
//! to `tokio-postgres` unchanged.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};

use super::StoreError;

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verify {
    /// Nothing: the connection is encrypted, against a passive listener
    /// only (libpq's `prefer` and `require` without a root certificate).
    Nothing,
    /// That a trusted root signed it (`verify-ca`, or `require` with
    /// `sslrootcert`).
    Chain,
    /// That, and that it names the host connected to (`verify-full`).
    Full,
}

/// Where trusted roots come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Roots {
    /// The system's trust store.
    System,
    /// The PEM file `sslrootcert` names.
    File(PathBuf),
}

/// The TLS part of a connection string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Tls {
    /// Whether to use TLS at all (as `tokio-postgres` understands it).
    pub(super) mode: SslMode,
    pub(super) verify: Verify,
    pub(super) roots: Roots,
}

/// Splits the TLS options off `url` (a URL or `key=value` pairs): the
/// connection string `tokio-postgres` reads, and how to do TLS.
pub(super) fn split(url: &str) -> Result<(String, Tls), StoreError> {
    let mut sslmode = None;
    let mut rootcert = None;
    let rest = if let Some((base, query)) = url
        .split_once("://")
        .and_then(|(scheme, _)| ["postgres", "postgresql"].contains(&scheme).then_some(url))
        .and_then(|u| u.split_once('?'))
    {
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "sslmode" => sslmode = Some(decode(v)),
                "sslrootcert" => rootcert = Some(decode(v)),
                "sslcert" | "sslkey" | "sslpassword" => return Err(client_certs()),
                _ => kept.push(pair),
            }
        }
        if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        }
    } else if url.contains("://") {
        url.to_owned()
    } else {
        let mut kept = Vec::new();
        for (k, v, raw) in pairs(url)? {
            match k.as_str() {
                "sslmode" => sslmode = Some(v),
                "sslrootcert" => rootcert = Some(v),
                "sslcert" | "sslkey" | "sslpassword" => return Err(client_certs()),
                _ => kept.push(raw),
            }
        }
        kept.join(" ")
    };
    let roots = match rootcert.as_deref() {
        None | Some("system") => Roots::System,
        Some(path) => Roots::File(PathBuf::from(path)),
    };
    // libpq: `sslrootcert=system` makes `verify-full` the default, and
    // `require` with a root certificate checks the chain.
    let system = rootcert.as_deref() == Some("system");
    let (mode, verify) = match sslmode.as_deref() {
        None if system => (SslMode::Require, Verify::Full),
        None | Some("prefer") => (SslMode::Prefer, Verify::Nothing),
        Some("disable") => (SslMode::Disable, Verify::Nothing),
        Some("allow") => (SslMode::Prefer, Verify::Nothing),
        Some("require") if rootcert.is_some() => (SslMode::Require, Verify::Chain),
        Some("require") => (SslMode::Require, Verify::Nothing),
        Some("verify-ca") => (SslMode::Require, Verify::Chain),
        Some("verify-full") => (SslMode::Require, Verify::Full),
        Some(other) => {
            return Err(StoreError::other(format!(
                "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, \
                 verify-full"
            )));
        }
    };
    if system && verify != Verify::Full {
        return Err(StoreError::other(
            "sslrootcert=system needs sslmode=verify-full (as libpq asks)",
        ));
    }
    Ok((
        rest,
        Tls {
            mode,
            verify,
            roots,
        },
    ))
}

fn client_certs() -> StoreError {
    StoreError::other(
        "client certificates (sslcert, sslkey, sslpassword) are not supported; \
         log in with a password",
    )
}

/// A URL query value with its `%XX` escapes decoded.
fn decode(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let byte = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(byte).unwrap_or(b'?'));
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `key=value` pairs of a libpq connection string: each key, its
/// value unquoted, and the pair as written.
fn pairs(s: &str) -> Result<Vec<(String, String, &str)>, StoreError> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let start = rest;
        let eq = rest.find('=').ok_or_else(|| {
            StoreError::other("not a Postgres connection string (a key without `=`)")
        })?;
        let key = rest[..eq].trim().to_owned();
        rest = rest[eq + 1..].trim_start();
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = if rest.starts_with('\'') {
            chars.next();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    '\'' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => value.push(c),
                }
            }
            end.ok_or_else(|| {
                StoreError::other("not a Postgres connection string (an unclosed quote)")
            })?
        } else {
            let mut end = rest.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    c if c.is_whitespace() => {
                        end = i;
                        break;
                    }
                    c => value.push(c),
                }
            }
            end
        };
        let written = start.len() - rest.len() + end;
        out.push((key, value, &start[..written]));
        rest = rest[end..].trim_start();
    }
    Ok(out)
}

impl Tls {
    /// The rustls connector for these settings.
    pub(super) fn connector(&self) -> Result<MakeRustls, StoreError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| StoreError::other("TLS to Postgres").with_source(e))?;
        let algorithms = provider.signature_verification_algorithms;
        let verifier: Arc<dyn ServerCertVerifier> = match self.verify {
            Verify::Nothing => Arc::new(Lenient {
                algorithms,
                chain: None,
            }),
            Verify::Chain | Verify::Full => {
                let roots = Arc::new(self.load_roots()?);
                let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider)
                    .build()
                    .map_err(|e| {
                        StoreError::other("TLS to Postgres: no usable root certificate")
                            .with_source(e)
                    })?;
                if self.verify == Verify::Full {
                    webpki
                } else {
                    Arc::new(Lenient {
                        algorithms,
                        chain: Some(webpki),
                    })
                }
            }
        };
        let config = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(MakeRustls(Arc::new(config)))
    }

    fn load_roots(&self) -> Result<RootCertStore, StoreError> {
        let mut roots = RootCertStore::empty();
        match &self.roots {
            Roots::System => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err(StoreError::other(
                        "TLS to Postgres: the system has no trusted root certificates; \
                         name one with sslrootcert=FILE",
                    ));
                }
            }
            Roots::File(path) => {
                let certs = CertificateDer::pem_file_iter(path)
                    .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| {
                        StoreError::other(format!(
                            "TLS to Postgres: cannot read sslrootcert {}",
                            path.display()
                        ))
                        .with_source(e)
                    })?;
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(StoreError::other(format!(
                        "TLS to Postgres: sslrootcert {} holds no certificate",
                        path.display()
                    )));
                }
            }
        }
        Ok(roots)
    }
}

/// Checks less of the server's certificate than rustls does, and the
/// handshake's signatures always (with the provider's algorithms, as
/// rustls's own verifier does).
#[derive(Debug)]
struct Lenient {
    /// The provider's signature algorithms.
    algorithms: WebPkiSupportedAlgorithms,
    /// `None`: any certificate, as libpq's `require` takes without a root
    /// certificate. `Some`: the chain to a trusted root, not the host name
    /// (`verify-ca`); rustls checks the name after the chain, so a
    /// certificate for another name has passed every other check.
    chain: Option<Arc<WebPkiServerVerifier>>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `tokio-postgres`'s TLS connector, on rustls.
#[derive(Clone)]
pub(super) struct MakeRustls(Arc<ClientConfig>);

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, host: &str) -> io::Result<RustlsConnect> {
        // No host name: a unix socket, where the server answers no to TLS
        // (and the handshake would need a name if it said yes).
        let name = match host {
            "" => None,
            host => Some(
                ServerName::try_from(host.to_owned())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
            ),
        };
        Ok(RustlsConnect {
            config: Arc::clone(&self.0),
            name,
        })
    }
}

/// One connection's TLS handshake.
pub(super) struct RustlsConnect {
    config: Arc<ClientConfig>,
    name: Option<ServerName<'static>>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        let connector = tokio_rustls::TlsConnector::from(self.config);
        Box::pin(async move {
            let name = self.name.ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "TLS needs a host name")
            })?;
            let tls = connector.connect(name, stream).await?;
            Ok(RustlsStream(Box::new(tls)))
        })
    }
}

/// A connection to Postgres inside TLS.
pub(super) struct RustlsStream<S>(Box<tokio_rustls::client::TlsStream<S>>);

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        // SCRAM without channel binding (`SCRAM-SHA-256`, not `-PLUS`),
        // as libpq's default `channel_binding=prefer` falls back to.
        ChannelBinding::none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_are_taken_out_of_a_url() {
        let (rest, tls) =
            split("postgres://u:p@db.example/app?sslmode=verify-full&application_name=x").unwrap();
        assert_eq!(rest, "postgres://u:p@db.example/app?application_name=x");
        assert_eq!((tls.mode, tls.verify), (SslMode::Require, Verify::Full));
        assert_eq!(tls.roots, Roots::System);
        let (rest, tls) =
            split("postgresql://db/app?sslrootcert=%2Ftmp%2Fca.pem&sslmode=require").unwrap();
        assert_eq!(rest, "postgresql://db/app");
        assert_eq!(tls.verify, Verify::Chain);
        assert_eq!(tls.roots, Roots::File("/tmp/ca.pem".into()));
    }

    #[test]
    fn tls_options_are_taken_out_of_key_value_pairs() {
        let (rest, tls) =
            split("host=db sslmode=verify-ca sslrootcert='/a b/ca.pem' dbname=app").unwrap();
        assert_eq!(rest, "host=db dbname=app");
        assert_eq!((tls.mode, tls.verify), (SslMode::Require, Verify::Chain));
        assert_eq!(tls.roots, Roots::File("/a b/ca.pem".into()));
        let (rest, tls) = split("host=/run/postgresql").unwrap();
        assert_eq!(rest, "host=/run/postgresql");
        assert_eq!((tls.mode, tls.verify), (SslMode::Prefer, Verify::Nothing));
    }

    #[test]
    fn bad_tls_options_are_refused_by_name() {
        let e = split("postgres://db/app?sslmode=sometimes").unwrap_err();
        assert!(e.to_string().contains("sslmode=sometimes"), "{e}");
        let e = split("host=db sslcert=/c.pem").unwrap_err();
        assert!(e.to_string().contains("client certificates"), "{e}");
        let e = split("host=db sslmode=require sslrootcert=system").unwrap_err();
        assert!(e.to_string().contains("verify-full"), "{e}");
        assert!(split("host='db").unwrap_err().to_string().contains("quote"));
    }
}
