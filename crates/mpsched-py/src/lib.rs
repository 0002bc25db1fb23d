//! PyO3 bindings: the `mpsched._core` extension module. Thin by design; the public API and its
//! documentation live in `python/mpsched`.

use pyo3::prelude::*;

/// Version of the compiled core.
#[pyfunction]
fn core_version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(core_version, m)?)?;
    Ok(())
}
