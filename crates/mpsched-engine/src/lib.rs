//! mpsched-engine: the bottom layers of the simulator.
//!
//! * [`time`]: integer nanosecond clock (`u64`, names carry `_ns`).
//! * [`event`]: the event queue, ordered by (time, insertion sequence) so ties are FIFO and a
//!   run is bit-reproducible.
//! * [`rng`]: deterministic random streams derived from (run seed, component id).
//! * [`net`]: packets, links (serialisation, propagation, delay variation, drop-tail queue,
//!   loss), time-varying capacity and routes.
//! * [`prefetch`]: cache prefetch hints for the event loop (no effect on results).
//!
//! Nothing here knows about TCP: a packet carries an opaque payload type chosen by the caller.
#![warn(missing_docs)]

pub mod event;
pub mod net;
pub mod prefetch;
pub mod rng;
pub mod time;
