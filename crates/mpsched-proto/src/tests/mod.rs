//! In-crate scenario tests: endpoints wired by the in-memory links of [`util`].

mod mptcp;
mod perf;
mod tcp;
pub(crate) mod util;
