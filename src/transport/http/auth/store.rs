//! Where tokens are kept between connections: the [`TokenStore`] trait, an
//! in-memory store (the default) and a file store that writes mode `0600`.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::secret::Secret;

/// What the client holds for one MCP server: the authorization server it
/// was authorized by, the client it registered there, and the tokens.
///
/// Serializable so that a [`TokenStore`] can keep it; the serialized form
/// holds the secrets themselves. `Debug` shows none of them.
#[derive(Clone, Serialize, Deserialize)]
pub struct Credentials {
    /// The authorization server's issuer identifier.
    pub(super) issuer: String,
    /// Its token endpoint, for refreshing without discovering again.
    pub(super) token_endpoint: String,
    /// The `resource` the tokens were asked for (RFC 8707).
    pub(super) resource: String,
    /// The client as that server knows it.
    pub(super) client: Registration,
    /// The tokens, once a flow gave them.
    #[serde(default)]
    pub(super) tokens: Option<Tokens>,
}

/// A client known to one authorization server.
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct Registration {
    pub(super) client_id: String,
    #[serde(default)]
    pub(super) client_secret: Option<Secret>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub(super) auth_method: String,
    /// Whether it came from dynamic registration (so is tied to its server).
    #[serde(default)]
    pub(super) registered: bool,
}

/// An access token and what came with it.
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct Tokens {
    pub(super) access_token: Secret,
    #[serde(default)]
    pub(super) refresh_token: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default)]
    pub(super) expires_at: Option<u64>,
    /// When to refresh it: 30 s before it expires, or half its lifetime
    /// before when that is shorter.
    #[serde(default)]
    pub(super) refresh_at: Option<u64>,
    /// The scopes granted (those asked for when the server did not say).
    #[serde(default)]
    pub(super) scopes: Vec<String>,
    /// The scopes asked for.
    #[serde(default)]
    pub(super) requested: Vec<String>,
}

/// How long before its expiry a token is refreshed, at most.
const REFRESH_MARGIN: Duration = Duration::from_secs(30);

impl Tokens {
    /// When a token issued now for `lifetime` should be refreshed.
    pub(super) fn refresh_time(lifetime: Duration) -> u64 {
        let lifetime = lifetime.as_secs();
        let margin = REFRESH_MARGIN.as_secs().min(lifetime / 2);
        now_secs().saturating_add(lifetime - margin)
    }

    /// Whether the access token is due for a refresh it can have.
    pub(super) fn refresh_due(&self) -> bool {
        self.refresh_token.is_some() && self.refresh_at.is_some_and(|at| now_secs() >= at)
    }
}

/// Seconds since the Unix epoch.
pub(super) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("client_id", &self.client.client_id)
            .field("auth_method", &self.client.auth_method)
            .field("has_tokens", &self.tokens.is_some())
            .finish_non_exhaustive()
    }
}

/// Keeps [`Credentials`] between connections, keyed by the MCP server's URL.
///
/// The transport loads them when it first sends a request and saves them
/// after each authorization and refresh. Calls are short and synchronous
/// (a file store writes a few hundred bytes).
///
/// The default is [`MemoryTokenStore`]: tokens last as long as the
/// configuration. [`FileTokenStore`] lets a restarted program reuse them.
pub trait TokenStore: Send + Sync {
    /// The credentials kept for `server`, if any.
    ///
    /// # Errors
    ///
    /// When the store cannot be read; the transport then starts without.
    fn load(&self, server: &str) -> io::Result<Option<Credentials>>;

    /// Keeps `credentials` for `server`, replacing what was there.
    ///
    /// # Errors
    ///
    /// When the store cannot be written: the request that authorized
    /// fails with an error naming the store.
    fn save(&self, server: &str, credentials: &Credentials) -> io::Result<()>;

    /// Forgets what is kept for `server`.
    ///
    /// # Errors
    ///
    /// When the store cannot be written.
    fn remove(&self, server: &str) -> io::Result<()>;
}

/// Keeps credentials in memory, for as long as the store lives (the default).
#[derive(Default)]
pub struct MemoryTokenStore {
    entries: Mutex<HashMap<String, Credentials>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.entries.lock().map_or(0, |e| e.len());
        f.debug_struct("MemoryTokenStore")
            .field("servers", &n)
            .finish()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, server: &str) -> io::Result<Option<Credentials>> {
        Ok(self.entries.lock().unwrap().get(server).cloned())
    }

    fn save(&self, server: &str, credentials: &Credentials) -> io::Result<()> {
        self.entries
            .lock()
            .unwrap()
            .insert(server.to_owned(), credentials.clone());
        Ok(())
    }

    fn remove(&self, server: &str) -> io::Result<()> {
        self.entries.lock().unwrap().remove(server);
        Ok(())
    }
}

/// Keeps credentials in one JSON file, readable and writable by its owner
/// only (mode `0600` on Unix), one entry per server.
///
/// Each save writes a new file beside it, with mode `0600` from its
/// creation, and renames it over the old one, so a crash never leaves half
/// a file. The folder must exist.
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    /// Serializes this process's read-modify-write cycles.
    lock: Mutex<()>,
}

impl FileTokenStore {
    /// A store kept in the file at `path` (created on first save).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileTokenStore {
            path: path.into(),
            lock: Mutex::new(()),
        }
    }

    /// The file the store is kept in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_all(&self) -> io::Result<HashMap<String, Credentials>> {
        match std::fs::read(&self.path) {
            Ok(bytes) if bytes.is_empty() => Ok(HashMap::new()),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not a token store: {e}", self.path.display()),
                )
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(HashMap::new()),
            Err(e) => Err(e),
        }
    }

    fn write_all(&self, entries: &HashMap<String, Credentials>) -> io::Result<()> {
        let json = serde_json::to_vec_pretty(entries).map_err(io::Error::other)?;
        let mut temp = self.path.clone().into_os_string();
        temp.push(format!(".{}.tmp", std::process::id()));
        let temp = PathBuf::from(temp);
        let written = write_private(&temp, &json).and_then(|()| std::fs::rename(&temp, &self.path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        written
    }
}

/// Writes a new file that only its owner may read.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        // A file left by an earlier run keeps its mode: set it again.
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(bytes)?;
    file.sync_all()
}

impl TokenStore for FileTokenStore {
    fn load(&self, server: &str) -> io::Result<Option<Credentials>> {
        let _held = self.lock.lock().unwrap();
        Ok(self.read_all()?.remove(server))
    }

    fn save(&self, server: &str, credentials: &Credentials) -> io::Result<()> {
        let _held = self.lock.lock().unwrap();
        // An unreadable old file is replaced rather than blocking every save.
        let mut entries = self.read_all().unwrap_or_default();
        entries.insert(server.to_owned(), credentials.clone());
        self.write_all(&entries)
    }

    fn remove(&self, server: &str) -> io::Result<()> {
        let _held = self.lock.lock().unwrap();
        let mut entries = self.read_all().unwrap_or_default();
        if entries.remove(server).is_some() {
            self.write_all(&entries)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Credentials {
        Credentials {
            issuer: "https://as.example.com".into(),
            token_endpoint: "https://as.example.com/token".into(),
            resource: "https://mcp.example.com/mcp".into(),
            client: Registration {
                client_id: "id-1".into(),
                client_secret: Some(Secret::new("client-secret-xyz")),
                auth_method: "client_secret_basic".into(),
                registered: true,
            },
            tokens: Some(Tokens {
                access_token: Secret::new("access-abc"),
                refresh_token: Some(Secret::new("refresh-def")),
                expires_at: Some(now_secs() + 3600),
                refresh_at: Some(now_secs() + 3570),
                scopes: vec!["a".into()],
                requested: vec!["a".into()],
            }),
        }
    }

    #[test]
    fn credentials_debug_hides_every_secret() {
        let text = format!("{:?}", sample());
        for secret in ["client-secret-xyz", "access-abc", "refresh-def"] {
            assert!(!text.contains(secret), "{text}");
        }
    }

    #[test]
    fn the_file_store_round_trips_with_owner_only_permissions() {
        let dir = std::env::temp_dir().join(format!("mcp-tasks-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = FileTokenStore::new(dir.join("tokens.json"));
        assert!(store.load("s").unwrap().is_none());
        store.save("s", &sample()).unwrap();
        let back = store.load("s").unwrap().expect("saved");
        assert_eq!(back.client.client_id, "id-1");
        assert_eq!(back.tokens.unwrap().access_token.expose(), "access-abc");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(store.path())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        store.remove("s").unwrap();
        assert!(store.load("s").unwrap().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
