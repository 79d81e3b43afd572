//! `mcp-tasks store`: the task store of an application's workers (not the
//! command line's own task list). `store migrate URL` sets up or brings
//! up to date the tables of a Postgres task store, the deploy step that
//! runs before the workers start.

use clap::{Args, Subcommand};
use mcp_tasks::store::{PostgresStore, StoreError};

use crate::{Failure, exit, one_line};

/// The commands of this module.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or bring up to date the tables of a Postgres task store.
    #[command(after_help = "\
Run once per deploy, before the workers start, as a role that may create tables in the \
schema (its owner): connecting a worker changes nothing, and refuses a schema older or \
newer than the worker's code. Running it again on a current schema changes nothing. \
Several runs at once apply each migration once (an advisory lock).

URL is a libpq connection string or URL (`postgres://user@host/db?sslmode=verify-full`; \
TLS as `sslmode` says). Prints the schema version before and after: `schema tasks: \
version 5 -> 6`, or `schema tasks: version 6, up to date`.

Exit status: 0 migrated or up to date; 6 the database could not be reached; 3 the \
migration was refused or failed, and nothing was changed (a schema newer than this \
program, missing rights, a bad URL, schema or role name).

The same migrations ship as SQL files (src/store/postgres/migrations/ in the source) for \
a person to apply by hand.")]
    Migrate(MigrateArgs),
}

/// `store migrate`'s arguments.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The database: a connection string or `postgres://` URL.
    #[arg(value_name = "URL", env = "DATABASE_URL", hide_env_values = true)]
    url: String,
    /// The schema that holds the tables (created if missing).
    #[arg(long, value_name = "NAME", default_value = "public")]
    schema: String,
    /// A role to grant what a worker needs (USAGE on the schema;
    /// SELECT, INSERT, UPDATE, DELETE on the tables; the sequences), so
    /// that workers connect as a role without rights on the schema.
    #[arg(long, value_name = "ROLE")]
    grant_to: Option<String>,
}

/// Runs `command`.
pub async fn run(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Migrate(args) => migrate(args).await,
    }
}

async fn migrate(args: MigrateArgs) -> anyhow::Result<u8> {
    let mut builder = PostgresStore::builder(&args.url).schema(args.schema.as_str());
    if let Some(role) = &args.grant_to {
        builder = builder.grant_to(role.as_str());
    }
    let migrated = builder.migrate().await.map_err(refused)?;
    if migrated.changed() {
        out!(
            "schema {}: version {} -> {}",
            args.schema,
            migrated.from,
            migrated.to
        );
    } else {
        out!(
            "schema {}: version {}, up to date",
            args.schema,
            migrated.to
        );
    }
    if let Some(role) = &args.grant_to {
        out!("granted to {role}");
    }
    Ok(exit::OK)
}

/// The failure of a migration, with its exit status.
fn refused(e: StoreError) -> Failure {
    let text = format!("cannot migrate the task store: {}", one_line(&e));
    if e.is_unavailable() {
        Failure::unreachable(text)
    } else {
        Failure::failed(text)
    }
}
