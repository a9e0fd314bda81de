//! pyscheduler's scheduling arithmetic, with no Python dependency: tested with `cargo test`,
//! exposed to Python by the thin `pyscheduler-python` binding crate. Independent of the event
//! crates: it shares only the error type (`pyscheduler-error`).
//!
//! - [`resource`]: resource quantities over interned types, with YuniKorn's saturating arithmetic.
//! - [`nodes`]: the node index: nodes ordered by (score, id), incremental re-scoring.
//! - [`plan`]: a node's guaranteed-share preemption plan on the ask's resource types.

pub mod nodes;
pub mod plan;
pub mod resource;

pub use pyscheduler_error::CoreError;
