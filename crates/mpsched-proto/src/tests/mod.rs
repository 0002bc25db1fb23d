//! In-crate scenario tests: endpoints wired by the in-memory links of [`util`].

mod tcp;
mod util;
