//! A negative peer on neva: it advertises the Tasks extension but ignores it,
//! creating a task only for the `params.task` opt-in that 2026-07-28 removed.
//!
//! ```text
//! neva-peer                 serve on stdin/stdout
//! ```
//!
//! | tool | task support (2025-11-25 style) | what a 2026-07-28 client gets |
//! |---|---|---|
//! | `export` | `required` | `-32601` "Tool required task augmented call" |
//! | `summary` | `optional` | an immediate result, never a task |
//! | `echo` | none | an immediate result |

use neva::App;

#[tokio::main]
async fn main() {
    let mut app = App::new().with_options(|opt| {
        opt.with_stdio()
            .with_name("neva-peer")
            .with_version(env!("CARGO_PKG_VERSION"))
            .with_tasks()
    });

    app.map_tool("export", || async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        "exported 42 rows"
    })
    .with_description("A long export; declares task support `required`.")
    .with_task_support("required");

    app.map_tool("summary", || async { "3 tables, 42 rows" })
        .with_description("A quick summary; declares task support `optional`.")
        .with_task_support("optional");

    app.map_tool("echo", |text: String| async move { text })
        .with_description("Echoes its text.");

    app.run().await;
}
