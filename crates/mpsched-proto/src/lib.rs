//! mpsched-proto: the protocol layer, sans-IO.
//!
//! Protocol state machines here react to an input (a segment, a timer, application data) at a
//! time the caller passes in, and return what to send. They never read a clock, never schedule
//! events and never touch the network: the event loop in `mpsched-sim` owns time and delivery.
//! Times are `u64` nanoseconds (names end in `_ns`).
//!
//! * [`tcp`]: one subflow (segment, sender, receiver, RTT, SACK scoreboard, handshake).
//! * [`cc`]: congestion control behind one trait (Reno, Cubic, LIA, OLIA, BALIA).
//! * [`mptcp`]: the connection (data sender and data receiver endpoints), also plain TCP.
//! * [`sched`]: the scheduler interface, the registry and one file per scheduler.
#![warn(missing_docs)]

pub mod cc;
pub mod mptcp;
mod pending;
pub mod sched;
pub mod tcp;

pub use pending::PendingNs;

#[cfg(test)]
mod tests;
