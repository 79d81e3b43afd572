//! Typed task handles: the typestate API for long-running tool calls.
//!
//! Its public items are re-exported at the crate root, their only public
//! path; the lifecycle, tracing and the compile-time guarantees are told on
//! [`Task`].

mod any;
mod builder;
mod core;
mod drive;
mod handle;
pub(crate) mod machine;
mod observed;
mod outcome;
mod reference;
pub(crate) mod schedule;
mod settings;
mod state;
mod trace;
mod updates;

pub use handle::{Task, TaskError, TaskState};
pub use outcome::Outcome;
pub use reference::TaskRef;
pub use settings::{InputMode, TaskBuilder, task_builder};
pub use state::{Cancellable, Finished, InputRequired, Pending, State};
pub use updates::Updates;
