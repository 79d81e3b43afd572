//! How a store connects: its settings ([`PostgresBuilder`]), TLS, the
//! bounds on connecting, and the migration step.

use std::sync::atomic::AtomicI64;

use super::schema::{self, Migrated};
use super::tls::{self, MakeRustls, Tls};
use super::*;

/// How long connecting may take, handshake and login included, unless the
/// connection string says otherwise (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one statement may take before the store gives up on it.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);

/// The settings of a [`PostgresStore`], from [`PostgresStore::builder`]:
/// the schema its tables live in, the bounds on connecting and on each
/// statement, and whose clock decides. Then
/// [`connect`](PostgresBuilder::connect), or
/// [`migrate`](PostgresBuilder::migrate) as the schema's owner.
///
/// ```no_run
/// use std::time::Duration;
/// use mcp_tasks::store::PostgresStore;
///
/// # async fn run() -> Result<(), mcp_tasks::store::StoreError> {
/// let url = "postgres://tasks@db.example.com/app?sslmode=verify-full";
/// // Once per deploy, as the owner of the schema:
/// PostgresStore::builder(url).schema("tasks").grant_to("worker").migrate().await?;
/// // In every worker, as a role that may only read and write rows:
/// let store = PostgresStore::builder(url)
///     .schema("tasks")
///     .statement_timeout(Duration::from_secs(5))
///     .connect()
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresBuilder {
    url: String,
    schema: String,
    statement_timeout: Duration,
    worker_clock: bool,
    grant: Option<String>,
}

impl PostgresBuilder {
    pub(super) fn new(url: &str) -> PostgresBuilder {
        PostgresBuilder {
            url: url.to_owned(),
            schema: "public".to_owned(),
            statement_timeout: STATEMENT_TIMEOUT,
            worker_clock: false,
            grant: None,
        }
    }

    /// The Postgres schema the store's tables live in (`public` unless
    /// set): a plain lowercase identifier (letters, digits, `_`, at most
    /// 63 bytes). [`migrate`](PostgresBuilder::migrate) creates it when
    /// it is missing.
    pub fn schema(mut self, name: impl Into<String>) -> PostgresBuilder {
        self.schema = name.into();
        self
    }

    /// How long one statement may take (10 seconds unless set), both in
    /// the database (`statement_timeout`) and on the way: a statement
    /// whose answer does not come in time (a wedged pooler, a lost
    /// network) fails with [`StoreError::is_unavailable`] and the
    /// connection is dropped, so that a tracker pauses and comes back as
    /// after an outage. Keep it well under the tracker's lease.
    pub fn statement_timeout(mut self, bound: Duration) -> PostgresBuilder {
        self.statement_timeout = bound;
        self
    }

    /// Takes the times callers pass ([`Claim::now`], due times, leases)
    /// as they are, instead of judging leases and due times by the
    /// database's clock. For tests that drive time themselves; in
    /// production, every worker's clock would have to agree.
    pub fn worker_clock(mut self) -> PostgresBuilder {
        self.worker_clock = true;
        self
    }

    /// For [`migrate`](PostgresBuilder::migrate): grant `role` what a
    /// worker needs (use of the schema; `SELECT`, `INSERT`, `UPDATE`,
    /// `DELETE` on its tables; use of its sequences) and nothing more.
    /// A plain lowercase identifier, as for [`schema`](PostgresBuilder::schema).
    pub fn grant_to(mut self, role: impl Into<String>) -> PostgresBuilder {
        self.grant = Some(role.into());
        self
    }

    /// Connects and checks that the schema is the one this code knows;
    /// it changes nothing in the database, so a role with rights on rows
    /// alone is enough.
    ///
    /// # Errors
    ///
    /// - [`StoreError::is_unavailable`]: the database cannot be reached,
    ///   or did not answer within the connect bound.
    /// - [`StoreError::is_schema_too_old`]: the tables are not there or
    ///   are older: run [`migrate`](PostgresBuilder::migrate) first.
    /// - [`StoreError::is_schema_too_new`]: the database was set up by a
    ///   newer version of this crate.
    /// - otherwise: a bad connection string or option, a refused login,
    ///   a TLS failure (the message says which).
    pub async fn connect(self) -> StoreResult<PostgresStore> {
        let settings = Settings::new(&self, true)?;
        let conn = settings.open().await?;
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                settings,
                clock: if self.worker_clock {
                    Clock::Worker
                } else {
                    Clock::Database
                },
                skew: AtomicI64::new(conn.skew),
                conn: Mutex::new(Some(Arc::new(conn))),
            }),
        })
    }

    /// Brings the schema up to date: creates the schema when it is
    /// missing, applies the migrations it lacks (the SQL files of
    /// `src/store/postgres/migrations/` in the crate, in order, for a
    /// person who would rather apply them by hand), and grants
    /// [`grant_to`](PostgresBuilder::grant_to)'s role its rights. Run it
    /// as a role that may change the schema, once per deploy: workers
    /// starting together do not need it, and migrations started together
    /// apply each file once (an advisory lock). No statement bound here:
    /// a migration of a large table takes what it takes.
    ///
    /// # Errors
    ///
    /// As [`connect`](PostgresBuilder::connect), and a migration the
    /// database refused (the transaction is rolled back: nothing changed).
    pub async fn migrate(self) -> StoreResult<Migrated> {
        let settings = Settings::new(&self, false)?;
        let grant = self
            .grant
            .as_deref()
            .map(|r| identifier("role", r))
            .transpose()?;
        let (mut client, _) = settings.client().await?;
        schema::migrate(&mut client, &settings.schema, grant).await
    }
}

/// Whose clock decides which leases ran out and which records are due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Clock {
    /// The database's (the default).
    Database,
    /// The times callers pass ([`PostgresBuilder::worker_clock`]).
    Worker,
}

/// What a store needs to connect again.
pub(super) struct Settings {
    config: Config,
    tls: Option<MakeRustls>,
    pub(super) schema: String,
    pub(super) statement_timeout: Duration,
    connect_timeout: Duration,
    /// Whether to check the schema version on connect.
    check: bool,
}

impl Settings {
    fn new(b: &PostgresBuilder, worker: bool) -> StoreResult<Settings> {
        let schema = identifier("schema", &b.schema)?.to_owned();
        let (url, tls) = tls::split(&b.url)?;
        let mut config: Config = url.parse().map_err(|e| {
            StoreError::other(format!("not a Postgres connection string: {e}")).with_source(e)
        })?;
        let connect_timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(CONNECT_TIMEOUT);
        if config.get_application_name().is_none() {
            config.application_name("mcp-tasks");
        }
        // The tables are found in `schema` alone; a worker's statements
        // are bounded in the database too.
        let mut options = config.get_options().map(str::to_owned).unwrap_or_default();
        options.push_str(&format!(" -c search_path={schema}"));
        if worker {
            let ms = b.statement_timeout.as_millis().max(1);
            options.push_str(&format!(" -c statement_timeout={ms}"));
        }
        config.options(options.trim_start());
        let tls = match tls {
            Tls {
                mode: tokio_postgres::config::SslMode::Disable,
                ..
            } => None,
            tls => {
                config.ssl_mode(tls.mode);
                Some(tls.connector()?)
            }
        };
        Ok(Settings {
            config,
            tls,
            schema,
            statement_timeout: b.statement_timeout,
            connect_timeout,
            check: worker,
        })
    }

    /// A connection, within the connect bound; the database's clock
    /// minus the local one, in milliseconds.
    async fn client(&self) -> StoreResult<(Client, i64)> {
        let connecting = async {
            let client = match &self.tls {
                None => {
                    let (client, connection) = self.config.connect(NoTls).await.map_err(refused)?;
                    tokio::spawn(drive(connection));
                    client
                }
                Some(tls) => {
                    let (client, connection) =
                        self.config.connect(tls.clone()).await.map_err(refused)?;
                    tokio::spawn(drive(connection));
                    client
                }
            };
            let before = millis(SystemTime::now());
            let clock: i64 = client
                .query_one(concat!("SELECT ", db_now!()), &[])
                .await
                .map_err(|e| classify(e).0)?
                .try_get(0)
                .map_err(|e| classify(e).0)?;
            // The database read its clock about half way through.
            let local = before + (millis(SystemTime::now()) - before) / 2;
            Ok::<_, StoreError>((client, clock - local))
        };
        match tokio::time::timeout(self.connect_timeout, connecting).await {
            Ok(done) => done,
            Err(_) => Err(StoreError::unavailable(format!(
                "the database did not complete a connection within {} ms",
                self.connect_timeout.as_millis()
            ))),
        }
    }

    /// Connects, checks the schema and prepares the statements, within
    /// the connect bound.
    pub(super) async fn open(&self) -> StoreResult<Conn> {
        let (client, skew) = self.client().await?;
        let ready = async {
            if self.check {
                schema::check(&client, &self.schema).await?;
            }
            Statements::prepare(&client)
                .await
                .map_err(|e| classify(e).0)
        };
        let st = match tokio::time::timeout(self.connect_timeout, ready).await {
            Ok(st) => st?,
            Err(_) => {
                return Err(StoreError::unavailable(format!(
                    "the database did not answer within {} ms",
                    self.connect_timeout.as_millis()
                )));
            }
        };
        Ok(Conn {
            client,
            st,
            claims: Default::default(),
            skew,
        })
    }
}

/// Runs a connection until it closes.
async fn drive<F: Future<Output = Result<(), tokio_postgres::Error>>>(connection: F) {
    if let Err(e) = connection.await {
        tracing::debug!("the task store's connection closed: {e}");
    }
}

/// `name` when it is a plain lowercase SQL identifier, safe to write into
/// a statement as it is.
fn identifier<'a>(what: &str, name: &'a str) -> StoreResult<&'a str> {
    let plain = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        Ok(name)
    } else {
        Err(StoreError::other(format!(
            "the {what} name {name:?} is not a plain lowercase identifier \
             (letters, digits and `_`, at most 63 bytes)"
        )))
    }
}
