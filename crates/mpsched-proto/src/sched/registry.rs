//! Name-keyed registry of schedulers: one line per scheduler.
//!
//! `build("minrtt+rp+bm", params)` builds the base scheduler and wraps it with each extension
//! named after a `+`, innermost first.

use super::Scheduler;

/// Error for an unknown scheduler name or bad parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(pub String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for BuildError {}

/// Description of one registered scheduler or extension.
#[derive(Debug, Clone)]
pub struct SchedulerInfo {
    /// Name used in scenarios and results.
    pub name: &'static str,
    /// One-line description.
    pub summary: &'static str,
    /// Where the algorithm comes from (paper, kernel file).
    pub source: &'static str,
    /// True for wrappers (`+rp`, `+bm`) that modify another scheduler.
    pub is_extension: bool,
    /// Default parameters, as JSON.
    pub default_params: serde_json::Value,
}

/// All registered base schedulers and extensions.
pub fn all() -> Vec<SchedulerInfo> {
    Vec::new()
}

/// Builds a scheduler from a name such as `"minrtt"` or `"minrtt+rp+bm"`.
///
/// `params` is a JSON object; keys are parameter names of the base scheduler or of an
/// extension (each scheduler reads its own and rejects unknown ones).
pub fn build(name: &str, params: &serde_json::Value) -> Result<Box<dyn Scheduler>, BuildError> {
    let _ = params;
    let known: Vec<&str> = all().iter().map(|i| i.name).collect();
    Err(BuildError(format!("unknown scheduler {name:?}; known: {}", known.join(", "))))
}
