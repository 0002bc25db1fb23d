//! In-crate scenario tests: endpoints wired by the in-memory links of [`util`].

mod contract;
mod failover;
mod fidelity;
mod in_order;
mod mptcp;
mod nagle;
mod perf;
mod plain_ack;
mod rack;
mod read_ack;
mod reassembly;
mod reuse;
mod single_path;
mod tcp;
mod undo;
pub(crate) mod util;
mod window;
