//! The bridge between the async front end and the GPU worker thread: admission control, a
//! bounded command channel into the worker, and one bounded event channel per session back.
//!
//! `handle` is the async side (submit, read events); `worker` the thread that drives a
//! [`SessionEngine`] through the `sessions` table; `command` what flows between them.

mod command;
mod events;
mod first_audio;
mod handle;
mod launch_pacer;
mod session_engine;
mod sessions;
mod shared;
mod text_backlog;
mod worker;

#[cfg(test)]
mod tests;

pub use events::{finish_reason_str, DoneStats, FrameEvent, SessionEvent};
pub use handle::{Scheduler, SessionHandle};
pub use session_engine::SessionEngine;
pub use shared::Shared;
pub use worker::{spawn_worker, WorkerOptions};
