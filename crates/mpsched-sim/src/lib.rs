//! mpsched-sim: turns a validated scenario into engine links and protocol endpoints, owns the
//! event loop, and collects the run records (flows and sampled series).
#![warn(missing_docs)]

mod app;
pub mod config;
mod endpoint;
mod path_events;
pub mod records;
pub mod run;
pub mod topology;
mod units;
mod validate;

pub use validate::MAX_SUBFLOWS;
