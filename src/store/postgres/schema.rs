//! The schema: its migrations, applied as a step of their own by a role
//! that may change the schema, and the check every connection makes.

use tokio_postgres::GenericClient;

use super::*;

/// The schema version this code writes and reads.
pub(super) const VERSION: i64 = 6;

/// The key of the advisory lock that migrations hold, so that migrations
/// started together apply each file once ("mcp-task" in ASCII).
pub(super) const MIGRATION_LOCK: i64 = 0x6d63_702d_7461_736b;

/// The migrations, in order: the version each reaches and its SQL, the
/// files of `migrations/` (shipped with the crate, for a person to apply
/// by hand). Each file ends by recording its version in
/// `mcp_tasks_schema`. Append only: a published migration never changes.
pub(super) const MIGRATIONS: &[(i64, &str)] = &[
    (1, include_str!("migrations/0001_tasks.sql")),
    (2, include_str!("migrations/0002_questions.sql")),
    (3, include_str!("migrations/0003_keys.sql")),
    (4, include_str!("migrations/0004_retention.sql")),
    (5, include_str!("migrations/0005_fill_factor.sql")),
    (6, include_str!("migrations/0006_history.sql")),
];

/// What [`PostgresStore::migrate`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migrated {
    /// The schema version the database had before (0: none).
    pub from: i64,
    /// The schema version it has now.
    pub to: i64,
}

impl Migrated {
    /// Whether any migration was applied.
    pub fn changed(&self) -> bool {
        self.from != self.to
    }
}

/// The schema version recorded in the database: `None` when its tables
/// are not there (or the role cannot see them).
pub(super) async fn version(
    client: &impl GenericClient,
) -> Result<Option<i64>, tokio_postgres::Error> {
    let exists: bool = client
        .query_one("SELECT to_regclass('mcp_tasks_schema') IS NOT NULL", &[])
        .await?
        .try_get(0)?;
    if !exists {
        return Ok(None);
    }
    let found: Option<i64> = client
        .query_one("SELECT max(version) FROM mcp_tasks_schema", &[])
        .await?
        .try_get(0)?;
    Ok(Some(found.unwrap_or(0)))
}

/// Checks that the schema is the one this code knows, changing nothing:
/// a schema from a newer release, an older one, or none, is an error
/// that says what to do.
pub(super) async fn check(client: &Client, schema: &str) -> StoreResult<()> {
    let found = version(client).await.map_err(|e| classify(e).0)?;
    match found {
        Some(v) if v == VERSION => Ok(()),
        Some(v) if v > VERSION => Err(StoreError::schema_too_new(v, VERSION)),
        found => Err(StoreError::schema_too_old(
            found.unwrap_or(0),
            VERSION,
            format!(
                "run the migration first, as a role that may change schema {schema} \
                 (`mcp-tasks store migrate URL`, or PostgresStore::migrate)"
            ),
        )),
    }
}

/// Brings the schema up to date, under an advisory lock held until the
/// transaction ends; creates the schema `schema` first when it is missing.
/// With `grant`, gives that role what a worker needs, and nothing more.
pub(super) async fn migrate(
    client: &mut Client,
    schema: &str,
    grant: Option<&str>,
) -> StoreResult<Migrated> {
    let sql = |e| classify(e).0;
    let tx = client.transaction().await.map_err(sql)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(sql)?;
    tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
        .await
        .map_err(sql)?;
    let from = version(&tx).await.map_err(sql)?.unwrap_or(0);
    if from > VERSION {
        // Dropping the transaction rolls it back.
        return Err(StoreError::schema_too_new(from, VERSION));
    }
    for (version, statements) in MIGRATIONS.iter().filter(|(v, _)| *v > from) {
        tx.batch_execute(statements).await.map_err(sql)?;
        tracing::info!(version, "the task store's schema was migrated");
    }
    if let Some(role) = grant {
        tx.batch_execute(&grants(schema, role)).await.map_err(sql)?;
    }
    tx.commit().await.map_err(sql)?;
    Ok(Migrated { from, to: VERSION })
}

/// What a worker's role needs: to find the tables, to read and write
/// rows, and to draw ids and fencing tokens. No right to change the
/// schema.
pub(super) fn grants(schema: &str, role: &str) -> String {
    format!(
        "GRANT USAGE ON SCHEMA {schema} TO {role};\n\
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role};\n\
         GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {role};\n"
    )
}
