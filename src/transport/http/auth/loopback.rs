//! [`LoopbackRedirect`]: receives the authorization server's redirect on
//! `127.0.0.1`, as a native application does (RFC 8252 §7.3). It opens
//! nothing itself: it hands the authorization URL to a function of yours
//! (by default, one that prints it on stderr) and waits for the browser.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

use super::{Authorizer, BoxFuture};
use crate::error::BoxError;

/// The path the redirect comes to.
const CALLBACK: &str = "/callback";
/// The longest request head read from the browser.
const MAX_HEAD: usize = 16 * 1024;
/// Bound on reading one request from a connection.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

type OnUrl = Arc<dyn Fn(&Url) + Send + Sync>;

/// Receives the redirect of an authorization on a loopback port.
///
/// [`LoopbackRedirect::bind`] listens on `127.0.0.1` (never another
/// interface); its redirect URI is `http://127.0.0.1:<port>/callback`.
/// When an authorization is needed, the URL to visit goes to the function
/// given to [`LoopbackRedirect::on_url`] (by default it is printed on
/// stderr); open it in a browser however suits the program. The first
/// request to `/callback` is the answer; the browser is told it may close
/// the page. Other paths get `404`.
///
/// ```no_run
/// # async fn f() -> std::io::Result<()> {
/// use mcp_tasks::transport::auth::LoopbackRedirect;
///
/// let redirect = LoopbackRedirect::bind(0)
///     .await?
///     .on_url(|url| eprintln!("Sign in at {url}"));
/// # Ok(()) }
/// ```
pub struct LoopbackRedirect {
    listener: TcpListener,
    addr: SocketAddr,
    on_url: OnUrl,
    timeout: Duration,
}

impl fmt::Debug for LoopbackRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoopbackRedirect")
            .field("addr", &self.addr)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl LoopbackRedirect {
    /// Listens on `127.0.0.1:port` (`0`: a port the system picks).
    ///
    /// # Errors
    ///
    /// When the port cannot be bound.
    pub async fn bind(port: u16) -> io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        Ok(LoopbackRedirect {
            listener,
            addr,
            on_url: Arc::new(|url: &Url| {
                eprintln!("To authorize, open this URL in a browser:\n\n  {url}\n");
            }),
            timeout: Duration::from_secs(300),
        })
    }

    /// Calls `f` with each authorization URL the user should visit
    /// (instead of printing it): open a browser, show a QR code, …
    pub fn on_url(mut self, f: impl Fn(&Url) + Send + Sync + 'static) -> Self {
        self.on_url = Arc::new(f);
        self
    }

    /// How long to wait for the redirect (default 5 minutes).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The address listened on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    async fn wait(&self) -> Result<Url, BoxError> {
        loop {
            let (stream, _) = self.listener.accept().await?;
            match tokio::time::timeout(READ_TIMEOUT, serve(stream, &self.redirect_uri())).await {
                Ok(Some(url)) => return Ok(url),
                Ok(None) | Err(_) => continue,
            }
        }
    }
}

impl Authorizer for LoopbackRedirect {
    fn redirect_uri(&self) -> String {
        format!("http://{}{CALLBACK}", self.addr)
    }

    fn authorize(&self, url: Url) -> BoxFuture<'_, Result<Url, BoxError>> {
        Box::pin(async move {
            (self.on_url)(&url);
            tokio::time::timeout(self.timeout, self.wait())
                .await
                .map_err(|_| {
                    format!(
                        "no redirect came within {}",
                        crate::human::duration(self.timeout)
                    )
                })?
        })
    }
}

/// Reads one request; answers it, and returns the redirect's URL when it is
/// the callback.
async fn serve(mut stream: TcpStream, redirect_uri: &str) -> Option<Url> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|&b| b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    let path = target.split('?').next().unwrap_or("");
    if method != "GET" || path != CALLBACK {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        return None;
    }
    let url = Url::parse(redirect_uri).ok()?.join(target).ok()?;
    let page = "<!doctype html><title>Authorized</title>\
                <p>The authorization reached the application. You may close this page.</p>";
    let reply = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.shutdown().await;
    Some(url)
}
