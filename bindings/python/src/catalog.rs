//! `FlussCatalog` and `FlussTable`: the library's providers for datafusion-python 55
//! (`__datafusion_catalog_provider__`, `__datafusion_table_provider__`).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_pyarrow::ToPyArrow;
use datafusion::catalog::{CatalogProvider, TableProvider};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion_ffi::catalog_provider::FFI_CatalogProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use fluss_datafusion::{Error, FlussCatalog, FlussSource};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::error::{from_datafusion, to_py};
use crate::provider::{PlanningEnv, RuntimeCatalog};
use crate::runtime::{InRuntime, block_on, handle};
use crate::source::SourceSpec;

/// The tables of a Fluss source as a DataFusion catalog (databases are its schemas).
#[pyclass(module = "fluss_datafusion", name = "FlussCatalog", frozen)]
pub struct PyFlussCatalog {
    catalog: Arc<dyn CatalogProvider>,
    source: Arc<dyn FlussSource>,
}

impl PyFlussCatalog {
    /// A catalog over the source `spec` names.
    pub fn open(py: Python<'_>, spec: SourceSpec) -> PyResult<Self> {
        let source = py.detach(|| block_on(spec.open())).map_err(to_py)?;
        Self::on(source)
    }

    /// A catalog over an open source (a `Session`'s: one store handle, one set of
    /// cluster connections).
    pub fn on(source: Arc<dyn FlussSource>) -> PyResult<Self> {
        let env = RuntimeEnvBuilder::new()
            .build_arc()
            .map_err(from_datafusion)?;
        // every scan of this catalog plans and executes with `env` (its object stores)
        let catalog: Arc<dyn CatalogProvider> = Arc::new(RuntimeCatalog::new(
            Arc::new(FlussCatalog::new(source.clone())),
            PlanningEnv::new(env),
        ));
        Ok(Self { catalog, source })
    }
}

#[pymethods]
impl PyFlussCatalog {
    /// Opens the source: a LocalStore (`store=`) or a cluster (`bootstrap_servers=`).
    #[new]
    #[pyo3(signature = (store=None, *, bootstrap_servers=None, lake_options=None,
                        sasl_username=None, sasl_password=None))]
    fn new(
        py: Python<'_>,
        store: Option<String>,
        bootstrap_servers: Option<String>,
        lake_options: Option<HashMap<String, String>>,
        sasl_username: Option<String>,
        sasl_password: Option<String>,
    ) -> PyResult<Self> {
        let spec = SourceSpec::new(
            store,
            bootstrap_servers,
            lake_options,
            sasl_username,
            sasl_password,
        );
        Self::open(py, spec)
    }

    /// The catalog for `SessionContext.register_catalog_provider(name, catalog)`.
    fn __datafusion_catalog_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = logical_codec_of(session)?;
        let provider =
            FFI_CatalogProvider::new_with_ffi_codec(self.catalog.clone(), Some(handle()), codec);
        PyCapsule::new_with_value(py, provider, c"datafusion_catalog_provider")
    }

    /// The databases.
    fn database_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        py.detach(|| block_on(self.source.list_databases()))
            .map_err(to_py)
    }

    /// The tables of `database`.
    fn table_names(&self, py: Python<'_>, database: &str) -> PyResult<Vec<String>> {
        py.detach(|| block_on(self.source.list_tables(database)))
            .map_err(to_py)
    }

    /// One table (`db.t`, or `t` in database `fluss`; virtual tables such as
    /// `t$lake` too), for `SessionContext.register_table(name, table)`.
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<PyFlussTable> {
        let (database, table) = name.split_once('.').unwrap_or(("fluss", name));
        let schema = self.catalog.schema(database).ok_or_else(|| {
            to_py(Error::not_found(format!(
                "database '{database}' does not exist"
            )))
        })?;
        let provider = py
            .detach(|| block_on(InRuntime::new(schema.table(table))))
            .map_err(from_datafusion)?
            .ok_or_else(|| {
                to_py(Error::not_found(format!(
                    "table '{database}.{table}' does not exist"
                )))
            })?;
        Ok(PyFlussTable {
            provider,
            name: format!("{database}.{table}"),
        })
    }

    fn __repr__(&self) -> String {
        format!("FlussCatalog({})", self.source.name())
    }
}

/// One table as a DataFusion table provider.
#[pyclass(module = "fluss_datafusion", name = "FlussTable", frozen)]
pub struct PyFlussTable {
    /// Already wrapped in the catalog's runtime and env.
    provider: Arc<dyn TableProvider>,
    name: String,
}

#[pymethods]
impl PyFlussTable {
    /// The provider for `SessionContext.register_table(name, table)`.
    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let codec = logical_codec_of(session)?;
        let provider = FFI_TableProvider::new_with_ffi_codec(
            self.provider.clone(),
            true,
            Some(handle()),
            codec,
        );
        PyCapsule::new_with_value(py, provider, c"datafusion_table_provider")
    }

    /// The table's Arrow schema, as a `pyarrow.Schema`.
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.provider.schema().as_ref().to_pyarrow(py)
    }

    fn __repr__(&self) -> String {
        format!("FlussTable({})", self.name)
    }
}

/// The logical codec datafusion-python passes (a capsule, or an object that has one).
fn logical_codec_of(session: Bound<'_, PyAny>) -> PyResult<FFI_LogicalExtensionCodec> {
    let attr = "__datafusion_logical_extension_codec__";
    let capsule = if session.hasattr(attr)? {
        session.getattr(attr)?.call0()?
    } else {
        session
    };
    let capsule = capsule.cast::<PyCapsule>()?;
    let pointer = capsule
        .pointer_checked(Some(c"datafusion_logical_extension_codec"))
        .map_err(|_| {
            PyValueError::new_err("expected a 'datafusion_logical_extension_codec' capsule")
        })?;
    // SAFETY: the capsule's name says it holds datafusion-ffi's codec, of the major the
    // package checked at import; it is cloned before Python code can run again.
    let codec = unsafe { pointer.cast::<FFI_LogicalExtensionCodec>().as_ref() };
    Ok(codec.clone())
}
