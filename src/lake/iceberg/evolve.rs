//! `ALTER TABLE ... ADD` on an Iceberg lake table: the Fluss schema's new columns are
//! added to the lake table's schema, as Fluss 1.0's `IcebergLakeCatalog.alterTable`
//! does (apache/fluss `fluss-lake/fluss-lake-iceberg/.../IcebergLakeCatalog.java`;
//! Fluss 0.9 refused it). Older data files lack the new field id, so Iceberg readers
//! (ours, by name or by field id) read it as NULL.

use iceberg::spec::Schema;
use iceberg::table::Table;
use iceberg::{TableIdent, spec::NestedField};

use super::hadoop::HadoopCatalog;
use super::schema::{IcebergTableLayout, table_layout};
use crate::error::{Error, ErrorKind, Result};
use crate::lake::{LEGACY_SYSTEM_COLUMNS, LakeLocation};
use crate::table::FlussTable;

/// Whether `lake` carries the legacy system columns (created before Fluss 1.0).
pub(super) fn is_legacy(lake: &Table) -> bool {
    lake.metadata()
        .current_schema()
        .field_by_name(LEGACY_SYSTEM_COLUMNS[2])
        .is_some()
}

/// Adds the layout's fields `lake` lacks (by name), with the layout's field ids, as
/// a new current schema; returns the table as committed.
pub(super) async fn sync_columns(
    catalog: &HadoopCatalog,
    lake: Table,
    layout: &IcebergTableLayout,
) -> Result<Table> {
    let current = lake.metadata().current_schema().clone();
    let missing: Vec<_> = layout
        .schema
        .as_struct()
        .fields()
        .iter()
        .filter(|f| current.field_by_name(&f.name).is_none())
        .cloned()
        .collect();
    if missing.is_empty() {
        return Ok(lake);
    }
    let name = lake.identifier().to_string();
    if layout.legacy {
        // the layout would number new columns after the system columns' ids
        return Err(Error::unsupported(
            "a legacy Iceberg lake table (with __bucket, __offset, __timestamp) cannot take \
             new columns",
        )
        .with_context("table", name));
    }
    for field in &missing {
        if field.id <= current.highest_field_id() {
            return Err(Error::data_invalid(format!(
                "column '{}' would take field id {}, which the Iceberg table already used",
                field.name, field.id
            ))
            .with_context("table", name));
        }
    }
    let fields = current
        .as_struct()
        .fields()
        .iter()
        .cloned()
        .chain(missing.into_iter().map(|f| {
            std::sync::Arc::new(NestedField::optional(
                f.id,
                f.name.clone(),
                (*f.field_type).clone(),
            ))
        }))
        .collect::<Vec<_>>();
    let invalid = |e: iceberg::Error| {
        Error::new(
            ErrorKind::Lake,
            "cannot add the columns to the Iceberg table",
        )
        .with_context("table", name.clone())
        .with_source(e)
    };
    let schema = Schema::builder()
        .with_fields(fields)
        .with_identifier_field_ids(current.identifier_field_ids())
        .build()
        .map_err(invalid)?;
    let location = lake.metadata_location().map(str::to_string);
    let metadata = lake
        .metadata()
        .clone()
        .into_builder(location)
        .add_current_schema(schema)
        .and_then(|b| b.build())
        .map_err(invalid)?
        .metadata;
    catalog.commit_metadata(&lake, metadata).await
}

/// Adds `table`'s new columns to its Iceberg lake table, if that exists yet and
/// lives in a hadoop catalog (the only one the LocalStore tiers to).
pub(crate) async fn add_lake_columns(table: &FlussTable, location: &LakeLocation) -> Result<()> {
    if super::IcebergCatalogType::of(location)? != super::IcebergCatalogType::Hadoop {
        return Ok(());
    }
    let catalog = HadoopCatalog::new(&location.warehouse)?;
    let ident = TableIdent::from_strs([table.path.database(), table.path.table()])
        .map_err(|e| Error::invalid_input("bad Iceberg table name").with_source(e))?;
    let Some(lake) = catalog.load_optional(&ident).await? else {
        return Ok(());
    };
    let layout = table_layout(table, is_legacy(&lake))?;
    sync_columns(&catalog, lake, &layout).await.map(|_| ())
}
