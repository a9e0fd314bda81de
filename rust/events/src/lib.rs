//! pyscheduler's event store, with no Python dependency: tested with `cargo test`, exposed to
//! Python by the thin `pyscheduler-python` binding crate. The stream writer
//! (`pyscheduler-stream`) sits above it and reads the pipeline through [`pipeline::Cursor`] and
//! [`pipeline::Shared`]; nothing here knows about streams.
//!
//! - [`interner`]: reference-counted string interner (`u32` ids, UUIDs kept as 16 bytes).
//! - [`payload`]: interned (message, resource) pairs.
//! - [`record`]: the 22-byte compact event record and the owned event in flight.
//! - [`ring`]: the ring buffer with YuniKorn's id semantics.
//! - [`wire`]: YuniKorn's JSON wire format, byte for byte.
//! - [`store`]: ring + interners: insert, resize, batch body, NDJSON.
//! - [`pipeline`]: the concurrent event pipeline: non-blocking add, a consumer thread, flush,
//!   and subscriptions (cursors) over the ring.

pub mod interner;
pub mod payload;
pub mod pipeline;
pub mod record;
pub mod ring;
pub mod store;
pub mod wire;

pub use pipeline::{EventPipeline, PipelineStats, Subscription, SubscriptionStatus};
pub use pyscheduler_error::CoreError;
pub use record::{EventFields, Kind, OwnedEvent};
pub use store::{DecodedEvent, EventStore, RangeInfo};
