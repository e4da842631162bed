//! `Session`: SQL over a Fluss source with pyarrow answers, no `datafusion` package
//! needed. Reads, writes (`INSERT`, `UPDATE`, `DELETE`, `MERGE INTO`), DDL and
//! `CALL fluss.tier` go through the library's `FlussSession`, as in the shell.

use std::collections::HashMap;

use arrow_pyarrow::{IntoPyArrow, ToPyArrow};
use datafusion::arrow::array::RecordBatchReader;
use fluss_datafusion::sql::{FlussSession, SessionOptions};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::catalog::PyFlussCatalog;
use crate::error::to_py;
use crate::reader::StreamReader;
use crate::runtime::block_on;
use crate::source::SourceSpec;

/// A SQL session over a LocalStore (`store=`) or a cluster (`bootstrap_servers=`).
#[pyclass(module = "fluss_datafusion", name = "Session", frozen)]
pub struct Session {
    inner: FlussSession,
}

#[pymethods]
impl Session {
    /// Opens the source and a session on it (database `database`, `fluss` by default).
    #[new]
    #[pyo3(signature = (store=None, *, bootstrap_servers=None, lake_options=None,
                        database=None, create=false, sasl_username=None, sasl_password=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        store: Option<String>,
        bootstrap_servers: Option<String>,
        lake_options: Option<HashMap<String, String>>,
        database: Option<String>,
        create: bool,
        sasl_username: Option<String>,
        sasl_password: Option<String>,
    ) -> PyResult<Self> {
        let spec = SourceSpec {
            create,
            ..SourceSpec::new(
                store,
                bootstrap_servers,
                lake_options,
                sasl_username,
                sasl_password,
            )
        };
        let inner = py
            .detach(|| {
                block_on(async move {
                    let object_store_options = spec.lake_options.clone();
                    let source = spec.open().await?;
                    let options = SessionOptions {
                        default_database: database.unwrap_or_else(|| "fluss".to_string()),
                        create_database: create,
                        object_store_options,
                        ..SessionOptions::default()
                    };
                    FlussSession::with_options(source, options).await
                })
            })
            .map_err(to_py)?;
        Ok(Self { inner })
    }

    /// Runs one statement; its rows as a `pyarrow.Table` (no columns for DDL and
    /// writes without a count).
    fn sql<'py>(&self, py: Python<'py>, query: &str) -> PyResult<Bound<'py, PyAny>> {
        let result = py
            .detach(|| block_on(self.inner.execute_statement(query)))
            .map_err(to_py)?;
        let batches = PyList::empty(py);
        for batch in &result.batches {
            batches.append(batch.to_pyarrow(py)?)?;
        }
        let schema = result.schema.as_ref().to_pyarrow(py)?;
        py.import("pyarrow")?
            .getattr("Table")?
            .call_method1("from_batches", (batches, schema))
    }

    /// Runs a query and returns a `pyarrow.RecordBatchReader` over its rows, read as
    /// they are produced (Polars and DuckDB read it through the Arrow C stream).
    fn sql_reader<'py>(&self, py: Python<'py>, query: &str) -> PyResult<Bound<'py, PyAny>> {
        let stream = py
            .detach(|| block_on(self.inner.query_stream(query)))
            .map_err(to_py)?;
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(StreamReader::new(stream));
        reader.into_pyarrow(py)
    }

    /// A `FlussCatalog` over the same source, for datafusion-python.
    fn catalog(&self) -> PyResult<PyFlussCatalog> {
        PyFlussCatalog::on(self.inner.source().clone())
    }

    fn __repr__(&self) -> String {
        format!("Session({})", self.inner.source().name())
    }
}
