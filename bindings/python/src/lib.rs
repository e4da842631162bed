//! Python bindings of fluss-datafusion, the extension module
//! `fluss_datafusion._fluss_datafusion` (the package's `__init__.py` re-exports it).
//!
//! Two ways in:
//! - [`catalog::PyFlussCatalog`] and [`catalog::PyFlussTable`] are providers for
//!   datafusion-python 55 (`SessionContext.register_catalog_provider`,
//!   `register_table`), through datafusion-ffi;
//! - [`session::Session`] runs SQL (queries, writes, `CALL fluss.tier`) and answers
//!   with pyarrow, without the `datafusion` package.

mod catalog;
mod error;
mod provider;
mod reader;
mod runtime;
mod session;
mod source;

use pyo3::prelude::*;

/// The module: its classes, its exception, and the datafusion-ffi major it was built
/// with (the package refuses to import beside another `datafusion` major).
#[pymodule]
fn _fluss_datafusion(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<session::Session>()?;
    m.add_class::<catalog::PyFlussCatalog>()?;
    m.add_class::<catalog::PyFlussTable>()?;
    m.add("FlussError", m.py().get_type::<error::FlussError>())?;
    m.add("DATAFUSION_FFI_MAJOR", datafusion_ffi::version())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
