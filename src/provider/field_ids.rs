//! Matching a parquet file's columns to the table's by Iceberg field id
//! (`PARQUET:field_id`) inside DataFusion's parquet source, so files written before a
//! rename read with their values under the current names.
//!
//! DataFusion's parquet opener rewrites the scan's projection and predicate from the
//! table schema to each file's schema with a [`PhysicalExprAdapter`] (see
//! `datafusion-datasource-parquet` 55, `opener/mod.rs`). This adapter gives the
//! default one a view of the file schema whose columns are renamed to the current
//! name of their field id (columns of unknown ids to names no table column has), so
//! it matches, casts and fills missing columns with nulls as usual, then puts the
//! file's own column names back into the rewritten expressions, which the reader
//! resolves against the real file schema.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::Result as DfResult;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::parquet::arrow::PARQUET_FIELD_ID_META_KEY;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr_adapter::{
    DefaultPhysicalExprAdapterFactory, PhysicalExprAdapter, PhysicalExprAdapterFactory,
};

/// Creates a [`FieldIdAdapter`] per file.
#[derive(Debug)]
pub(crate) struct FieldIdAdapterFactory {
    /// The current column name of each field id.
    names: HashMap<i32, String>,
}

impl FieldIdAdapterFactory {
    /// An adapter factory for a lake whose current schema names `columns` (name,
    /// field id).
    pub(crate) fn new(columns: &[(String, i32)]) -> Self {
        Self {
            names: columns.iter().map(|(n, id)| (*id, n.clone())).collect(),
        }
    }
}

fn field_id(field: &Field) -> Option<i32> {
    field
        .metadata()
        .get(PARQUET_FIELD_ID_META_KEY)
        .and_then(|id| id.parse().ok())
}

/// Whether `field` is a column the parquet reader makes rather than reads (arrow-rs
/// names their extension types `parquet.virtual.*`).
fn is_virtual(field: &Field) -> bool {
    field
        .extension_type_name()
        .is_some_and(|name| name.starts_with("parquet.virtual."))
}

impl PhysicalExprAdapterFactory for FieldIdAdapterFactory {
    fn create(
        &self,
        logical_file_schema: SchemaRef,
        physical_file_schema: SchemaRef,
    ) -> DfResult<Arc<dyn PhysicalExprAdapter>> {
        let renamed: Vec<Field> = physical_file_schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                // A virtual column the reader makes (`row_number`) keeps its name: it
                // has no field id, and the table schema names it as it is.
                if is_virtual(f) {
                    return f.as_ref().clone();
                }
                let Some(current) = field_id(f).and_then(|id| self.names.get(&id)) else {
                    // A column of no current field id: no table column may match it.
                    return f
                        .as_ref()
                        .clone()
                        .with_name(format!("\u{0}field without a current id {i}"));
                };
                match logical_file_schema.field_with_name(current) {
                    // The table's own field when only the name (and the field-id
                    // metadata) differ, so the default adapter adds no cast.
                    Ok(logical) if logical.data_type() == f.data_type() => logical.clone(),
                    _ => f.as_ref().clone().with_name(current),
                }
            })
            .collect();
        let renamed = Arc::new(Schema::new_with_metadata(
            renamed,
            physical_file_schema.metadata().clone(),
        ));
        let inner =
            DefaultPhysicalExprAdapterFactory.create(logical_file_schema.clone(), renamed)?;
        Ok(Arc::new(FieldIdAdapter {
            inner,
            physical_file_schema,
        }))
    }
}

/// Rewrites table-schema expressions to one file's columns, matched by field id.
#[derive(Debug)]
struct FieldIdAdapter {
    /// The default adapter, over the file schema renamed to current names.
    inner: Arc<dyn PhysicalExprAdapter>,
    physical_file_schema: SchemaRef,
}

impl PhysicalExprAdapter for FieldIdAdapter {
    fn rewrite(&self, expr: Arc<dyn PhysicalExpr>) -> DfResult<Arc<dyn PhysicalExpr>> {
        let rewritten = self.inner.rewrite(expr)?;
        // The renamed view has the file's column order: an index is the file's.
        rewritten
            .transform(|e| {
                let Some(column) = e.downcast_ref::<Column>() else {
                    return Ok(Transformed::no(e));
                };
                match self.physical_file_schema.fields().get(column.index()) {
                    Some(field) if field.name() != column.name() => Ok(Transformed::yes(Arc::new(
                        Column::new(field.name(), column.index()),
                    ))),
                    _ => Ok(Transformed::no(e)),
                }
            })
            .data()
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{BinaryExpr, lit};

    use super::*;

    fn with_id(name: &str, id: i32) -> Field {
        Field::new(name, DataType::Utf8, true).with_metadata(HashMap::from([(
            PARQUET_FIELD_ID_META_KEY.to_string(),
            id.to_string(),
        )]))
    }

    #[test]
    fn columns_are_matched_by_field_id_not_by_name() {
        // a file written before `a` (id 2) and `b` (id 3) swapped names
        let file = Arc::new(Schema::new(vec![
            with_id("id", 1),
            with_id("a", 2),
            with_id("b", 3),
        ]));
        let table = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Utf8, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("a", DataType::Utf8, true),
        ]));
        let current = [("id".into(), 1), ("b".into(), 2), ("a".into(), 3)];
        let adapter = FieldIdAdapterFactory::new(&current)
            .create(table, file)
            .unwrap();
        // table column `a` (index 2) is the file's column 2, named `b` there
        let a: Arc<dyn PhysicalExpr> = Arc::new(Column::new("a", 2));
        let rewritten = adapter.rewrite(a).unwrap();
        let column = rewritten
            .downcast_ref::<Column>()
            .unwrap_or_else(|| panic!("{rewritten}"));
        assert_eq!((column.name(), column.index()), ("b", 2));
        // and in a predicate
        let b_eq: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
            Arc::new(Column::new("b", 1)),
            Operator::Eq,
            lit("x"),
        ));
        let rewritten = adapter.rewrite(b_eq).unwrap();
        assert_eq!(rewritten.to_string(), "a@1 = x");
    }

    #[test]
    fn a_column_of_no_current_field_id_reads_as_null() {
        let file = Arc::new(Schema::new(vec![with_id("id", 1), with_id("gone", 7)]));
        let table = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Utf8, true),
            Field::new("gone", DataType::Utf8, true),
        ]));
        let adapter = FieldIdAdapterFactory::new(&[("id".into(), 1), ("gone".into(), 8)])
            .create(table, file)
            .unwrap();
        let gone: Arc<dyn PhysicalExpr> = Arc::new(Column::new("gone", 1));
        let rewritten = adapter.rewrite(gone).unwrap();
        assert!(rewritten.downcast_ref::<Column>().is_none(), "{rewritten}");
    }
}
