//! A throwaway Postgres for a test binary: one cluster per binary, one
//! database per test.
//!
//! [`start`] runs `initdb` into a fresh temporary folder and `pg_ctl
//! start` on a unix socket in that folder, as the `postgres` user when the
//! tests run as root. It also listens on a free loopback TCP port with
//! TLS on, under a certificate for `localhost` that a throwaway
//! authority made (`openssl`), for the tests of TLS ([`Pg::tls`]). The [`Cluster`] guard stops
//! the server and deletes the folder when it drops, a panic included.
//! With `DATABASE_URL` set, that server is used instead, and the
//! databases made for the tests are dropped at the end.
//!
//! Without Postgres, [`start`] returns `None` and the binary skips, unless
//! `MCP_TASKS_REQUIRE_POSTGRES=1`: then it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where the tests make their databases: a cheap handle, shared by every
/// test of the binary.
#[derive(Clone, Debug)]
pub struct Pg {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// The connection string of the server's `postgres` database.
    admin: String,
    /// The TLS side of a cluster this binary started.
    tls: Option<Tls>,
    /// A unique prefix for this binary's databases.
    prefix: String,
    next: AtomicUsize,
    made: Mutex<Vec<String>>,
}

/// The server this binary started (or borrowed): dropping it stops the
/// server and deletes its folder, or drops the databases made on a
/// borrowed one.
#[derive(Debug)]
pub struct Cluster {
    local: Option<Local>,
    pg: Pg,
}

#[derive(Debug)]
struct Local {
    bin: PathBuf,
    folder: PathBuf,
    as_postgres: bool,
}

/// Starts a cluster, or borrows `DATABASE_URL`'s server. `None` when no
/// Postgres is installed (a message says so), unless
/// `MCP_TASKS_REQUIRE_POSTGRES=1`, which makes that a panic.
pub fn start() -> Option<(Cluster, Pg)> {
    let prefix = format!("mcp_tasks_test_{}", std::process::id());
    if let Ok(url) = std::env::var("DATABASE_URL") {
        let pg = Pg::new(url, prefix, None);
        let cluster = Cluster {
            local: None,
            pg: pg.clone(),
        };
        return Some((cluster, pg));
    }
    let Some(bin) = binaries() else {
        let required = std::env::var("MCP_TASKS_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "MCP_TASKS_REQUIRE_POSTGRES=1 but no Postgres was found \
             (initdb and pg_ctl in /usr/lib/postgresql/*/bin or on PATH)"
        );
        println!(
            "skipped: no Postgres found (initdb and pg_ctl in /usr/lib/postgresql/*/bin or on \
             PATH); install it or set DATABASE_URL"
        );
        return None;
    };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let folder = std::env::temp_dir().join(format!("mcp-tasks-pg-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a temporary folder");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port();
    let tls = Tls {
        port,
        ca: folder.join("ca.pem"),
        other_ca: folder.join("other-ca.pem"),
    };
    // From here on, the guard cleans up whatever happens.
    let cluster = Cluster {
        pg: Pg::new(
            format!(
                "host={} port={port} user=postgres dbname=postgres",
                folder.display()
            ),
            prefix,
            Some(tls),
        ),
        local: Some(Local {
            bin,
            folder,
            as_postgres: is_root(),
        }),
    };
    let local = cluster.local.as_ref().expect("a local cluster");
    certificates(&local.folder);
    if local.as_postgres {
        run(Command::new("chown")
            .arg("-R")
            .arg("postgres:")
            .arg(&local.folder));
    }
    let data = local.folder.join("data");
    run(local
        .tool("initdb")
        .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "-N", "-D"])
        .arg(&data));
    // A unix socket in the folder, and loopback TCP with TLS.
    let options = format!(
        "-k {dir} -p {port} -c listen_addresses=127.0.0.1 -c ssl=on \
         -c ssl_cert_file={dir}/server.pem -c ssl_key_file={dir}/server.key \
         -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
        dir = local.folder.display()
    );
    run(local
        .tool("pg_ctl")
        .args(["-w", "-t", "30", "-D"])
        .arg(&data)
        .arg("-l")
        .arg(local.folder.join("server.log"))
        .args(["-o", &options, "start"]));
    let pg = cluster.pg.clone();
    Some((cluster, pg))
}

/// The TLS side of a test cluster.
#[derive(Debug, Clone)]
#[allow(dead_code, reason = "not every binary tests TLS")]
pub struct Tls {
    /// Its loopback TCP port.
    pub port: u16,
    /// The authority that signed its certificate (for `localhost` only).
    pub ca: PathBuf,
    /// An authority that signed nothing of it.
    pub other_ca: PathBuf,
}

/// Makes a throwaway certificate authority, a server certificate for
/// `localhost` it signs, and a second authority, in `folder`.
fn certificates(folder: &Path) {
    let ca = |name: &str| {
        run(Command::new("openssl")
            .current_dir(folder)
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
            .args([
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.pem"),
            ])
            .args(["-subj", &format!("/CN={name}")])
            .args(["-addext", "basicConstraints=critical,CA:TRUE"])
            .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]));
    };
    ca("ca");
    ca("other-ca");
    run(Command::new("openssl")
        .current_dir(folder)
        .args([
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-keyout", "server.key", "-out", "server.csr"])
        .args(["-subj", "/CN=localhost"]));
    std::fs::write(
        folder.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("the certificate's extensions");
    run(Command::new("openssl")
        .current_dir(folder)
        .args([
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
        ])
        .args(["-CAcreateserial", "-days", "2", "-out", "server.pem"])
        .args(["-extfile", "server.ext"]));
    run(Command::new("chmod")
        .arg("600")
        .arg(folder.join("server.key")));
}

impl Pg {
    fn new(admin: String, prefix: String, tls: Option<Tls>) -> Pg {
        Pg {
            inner: Arc::new(Shared {
                admin,
                tls,
                prefix,
                next: AtomicUsize::new(0),
                made: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A new, empty database; its connection string.
    pub async fn database(&self) -> String {
        let n = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let name = format!("{}_{n}", self.inner.prefix);
        let admin = self.admin().await;
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("CREATE DATABASE");
        self.inner.made.lock().unwrap().push(name.clone());
        with_dbname(&self.inner.admin, &name)
    }

    /// The TLS side of the cluster, when this binary started it.
    #[allow(dead_code, reason = "not every binary tests TLS")]
    pub fn tls(&self) -> Option<&Tls> {
        self.inner.tls.as_ref()
    }

    /// A connection to the server's `postgres` database.
    pub async fn admin(&self) -> tokio_postgres::Client {
        connect(&self.inner.admin).await
    }
}

/// A plain connection to `url`, for a test to look at or damage a
/// database behind the store's back.
pub async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("a connection to the test server");
    tokio::spawn(connection);
    client
}

/// `url` naming the database `name` instead.
fn with_dbname(url: &str, name: &str) -> String {
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let (base, query) = rest
                .split_once('?')
                .map_or((rest, None), |(b, q)| (b, Some(q)));
            let host = base.split_once('/').map_or(base, |(h, _)| h);
            let query = query.map(|q| format!("?{q}")).unwrap_or_default();
            return format!("{scheme}{host}/{name}{query}");
        }
    }
    format!("{url} dbname={name}")
}

/// The folder of `initdb` and `pg_ctl`: the newest Debian-packaged
/// version, else the ones on `PATH`.
fn binaries() -> Option<PathBuf> {
    let has = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let mut packaged: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, bin)| has(bin))
        .collect();
    packaged.sort();
    if let Some((_, bin)) = packaged.pop() {
        return Some(bin);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|dir| has(dir))
}

/// Whether the tests run as root (Postgres refuses to).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().next())
            == Some("0")
    })
}

impl Cluster {
    /// The process id of the server this binary started (the postmaster,
    /// whose children are the backends and the server's own processes);
    /// `None` for a borrowed server.
    #[allow(dead_code, reason = "only the benchmarks look at the processes")]
    pub fn postmaster(&self) -> Option<u32> {
        let local = self.local.as_ref()?;
        let pid = std::fs::read_to_string(local.folder.join("data").join("postmaster.pid")).ok()?;
        pid.lines().next()?.trim().parse().ok()
    }
}

impl Local {
    /// `name` from the Postgres binaries, as the `postgres` user if need be.
    fn tool(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }
}

/// Runs `command`, panicking with its output when it fails.
fn run(command: &mut Command) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Drop for Cluster {
    fn drop(&mut self) {
        match &self.local {
            Some(local) => {
                let data = local.folder.join("data");
                if data.join("postmaster.pid").exists() {
                    let stopped = local
                        .tool("pg_ctl")
                        .args(["-w", "-t", "30", "-m", "immediate", "-D"])
                        .arg(&data)
                        .arg("stop")
                        .output();
                    if !stopped.is_ok_and(|o| o.status.success()) {
                        eprintln!("could not stop the test Postgres in {}", data.display());
                    }
                }
                let _ = std::fs::remove_dir_all(&local.folder);
            }
            None => {
                let made = std::mem::take(
                    &mut *self.pg.inner.made.lock().unwrap_or_else(|e| e.into_inner()),
                );
                if made.is_empty() {
                    return;
                }
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                let admin = self.pg.inner.admin.clone();
                rt.block_on(async move {
                    let drop_all = async {
                        let Ok((client, connection)) =
                            tokio_postgres::connect(&admin, tokio_postgres::NoTls).await
                        else {
                            return;
                        };
                        tokio::spawn(connection);
                        for name in made {
                            let _ = client
                                .batch_execute(&format!(
                                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                                ))
                                .await;
                        }
                    };
                    let _ = tokio::time::timeout(Duration::from_secs(30), drop_all).await;
                });
            }
        }
    }
}
