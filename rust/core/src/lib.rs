//! pyscheduler's pure-Rust hot paths, with no Python dependency: tested with `cargo test`,
//! exposed to Python by the thin `pyscheduler-python` binding crate.
//!
//! - [`interner`]: reference-counted string interner (`u32` ids, UUIDs kept as 16 bytes).
//! - [`payload`]: interned (message, resource) pairs.
//! - [`record`]: the 22-byte compact event record and the owned event in flight.
//! - [`ring`]: the ring buffer with YuniKorn's id semantics.
//! - [`wire`]: YuniKorn's JSON wire format, byte for byte.
//! - [`store`]: ring + interners: insert, resize, batch body, NDJSON.
//! - [`pipeline`]: the concurrent event pipeline: non-blocking add, a consumer thread, flush,
//!   and stream subscriptions over the ring.
//! - [`stream`]: the stream writer: every byte of a stream's body (history, live events from
//!   one thread for all streams, the closing line), with one write deadline.
//! - [`nodes`]: the node index: nodes ordered by (score, id), incremental re-scoring.
//! - [`plan`]: a node's guaranteed-share preemption plan on the ask's resource types.
//! - [`resource`]: resource quantities over interned types, with YuniKorn's saturating arithmetic.

pub mod error;
pub mod stream;
pub mod interner;
pub mod nodes;
pub mod payload;
pub mod plan;
pub mod pipeline;
pub mod record;
pub mod resource;
pub mod ring;
pub mod store;
pub mod wire;

pub use error::CoreError;
pub use stream::{Framing, StreamOptions, StreamOutcome, StreamTicket};
pub use pipeline::{EventPipeline, PipelineStats, Subscription, SubscriptionStatus};
pub use record::{EventFields, Kind, OwnedEvent};
pub use store::{DecodedEvent, EventStore, RangeInfo};
