//! A table whose metadata cannot be read. One such table must not hide the rest of
//! the catalog: it is listed (`SHOW TABLES`, `information_schema`, `\d`) with no
//! columns, reading it is an error naming the damage, and `DROP TABLE` removes it.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use fluss::metadata::TablePath;

use crate::error::Error;

/// The provider of a table whose metadata failed to read as data (truncated or
/// corrupt files); other failures (I/O, an unreachable cluster) stay errors.
#[derive(Debug)]
pub struct DamagedTable {
    path: TablePath,
    reason: String,
}

impl DamagedTable {
    /// `path`, which failed to load with `error`.
    pub fn new(path: TablePath, error: &Error) -> Self {
        Self {
            path,
            reason: error.to_string(),
        }
    }

    /// What reading it gives.
    fn error(&self) -> Error {
        Error::data_invalid(format!(
            "table '{}' is damaged and cannot be read ({}); DROP TABLE {} removes it",
            self.path, self.reason, self.path
        ))
    }
}

/// The error naming `path`'s damage (`error`, met loading it) that reading it gives.
pub(crate) fn damaged_table_error(path: &TablePath, error: &Error) -> Error {
    DamagedTable::new(path.clone(), error).error()
}

#[async_trait]
impl TableProvider for DamagedTable {
    fn schema(&self) -> SchemaRef {
        Arc::new(Schema::empty())
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        _projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Err(self.error().into())
    }
}
