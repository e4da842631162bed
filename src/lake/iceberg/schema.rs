//! A Fluss table as Iceberg tiering creates it (apache/fluss `IcebergSchemaUtils`,
//! `IcebergPartitionSpecUtils`; `docs/reference/fluss-formats.md` §3.3). Fluss 1.0
//! (FIP-27, apache/fluss #4019) creates "clean" tables: the Fluss columns only,
//! primary-key columns as identifier fields, spec `identity(<partition keys>)` then
//! `bucket(<bucket key>, N)` when there is a bucket key, unsorted. Tables created
//! earlier ("legacy", recognised by their `__timestamp` column) also carry the
//! required system columns `__bucket int`, `__offset long`, `__timestamp
//! timestamptz`, `identity(__bucket)` when there is no bucket key, and sort order
//! `ASC(__offset)`; tiering keeps writing them that way. And the log's rows in either
//! shape, as arrow batches the `iceberg` writer takes.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int32Array, Int64Array, RecordBatch, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType as ArrowType, Field, Schema as ArrowSchema, TimeUnit};
use fluss::metadata::DataType as FlussType;
use iceberg::spec::{
    NestedField, NullOrder, PrimitiveType, Schema, SortDirection, SortField, SortOrder, Transform,
    Type, UnboundPartitionSpec,
};

use crate::error::{Error, Result};
use crate::lake::{LEGACY_SYSTEM_COLUMNS, system_column};
use crate::log::ChangelogBatch;
use crate::table::FlussTable;

/// Parquet field-id metadata key the `iceberg` writer matches columns by.
const FIELD_ID_KEY: &str = "PARQUET:field_id";

/// The Iceberg table of a Fluss table: schema, spec, sort order and properties.
pub struct IcebergTableLayout {
    /// Fluss columns (then, legacy, the system columns), field ids from 1.
    pub schema: Schema,
    /// `identity(partition keys)`, then the bucket field (if any).
    pub spec: UnboundPartitionSpec,
    /// Unsorted; `ASC(__offset)` on legacy tables.
    pub sort_order: SortOrder,
    /// Whether the table carries the legacy system columns.
    pub legacy: bool,
    /// Table properties.
    pub properties: HashMap<String, String>,
    /// The arrow (59) schema of the rows written, with field ids.
    pub arrow: Arc<ArrowSchema>,
}

/// Fluss type -> Iceberg type and the arrow type the writer expects for it.
fn iceberg_type(ty: &FlussType) -> Result<(PrimitiveType, ArrowType)> {
    Ok(match ty {
        FlussType::Boolean(_) => (PrimitiveType::Boolean, ArrowType::Boolean),
        FlussType::TinyInt(_) | FlussType::SmallInt(_) | FlussType::Int(_) => {
            (PrimitiveType::Int, ArrowType::Int32)
        }
        FlussType::BigInt(_) => (PrimitiveType::Long, ArrowType::Int64),
        FlussType::Float(_) => (PrimitiveType::Float, ArrowType::Float32),
        FlussType::Double(_) => (PrimitiveType::Double, ArrowType::Float64),
        FlussType::Char(_) | FlussType::String(_) => (PrimitiveType::String, ArrowType::Utf8),
        FlussType::Decimal(d) => (
            PrimitiveType::Decimal {
                precision: d.precision(),
                scale: d.scale(),
            },
            ArrowType::Decimal128(d.precision() as u8, d.scale() as i8),
        ),
        FlussType::Date(_) => (PrimitiveType::Date, ArrowType::Date32),
        // Iceberg's time is microseconds of the day (Fluss 1.0's
        // FlussDataTypeToIcebergDataType.visit(TimeType): Types.TimeType)
        FlussType::Time(_) => (
            PrimitiveType::Time,
            ArrowType::Time64(TimeUnit::Microsecond),
        ),
        FlussType::Timestamp(_) => (
            PrimitiveType::Timestamp,
            ArrowType::Timestamp(TimeUnit::Microsecond, None),
        ),
        FlussType::TimestampLTz(_) => (
            PrimitiveType::Timestamptz,
            ArrowType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
        ),
        FlussType::Bytes(_) | FlussType::Binary(_) => (PrimitiveType::Binary, ArrowType::Binary),
        other => {
            return Err(Error::unsupported(format!(
                "type {other} cannot be tiered to Iceberg by this crate yet"
            )));
        }
    })
}

fn with_field_id(field: Field, id: i32) -> Field {
    field.with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
}

/// The Iceberg layout of `table`: clean, as Fluss 1.0 creates new tables, or `legacy`
/// (for a lake table that already has the system columns).
pub fn table_layout(table: &FlussTable, legacy: bool) -> Result<IcebergTableLayout> {
    let info = &table.info;
    let pk = info.get_primary_keys();
    let mut fields = Vec::new();
    let mut arrow_fields = Vec::new();
    let mut identifier_ids = Vec::new();
    let mut ids_by_name = HashMap::new();
    for (i, column) in info.get_schema().columns().iter().enumerate() {
        let id = i as i32 + 1;
        let (ty, arrow) = iceberg_type(column.data_type())?;
        let is_key = pk.iter().any(|k| k == column.name());
        let nullable = !is_key && column.data_type().is_nullable();
        fields.push(Arc::new(if nullable {
            NestedField::optional(id, column.name(), Type::Primitive(ty))
        } else {
            NestedField::required(id, column.name(), Type::Primitive(ty))
        }));
        arrow_fields.push(with_field_id(
            Field::new(column.name(), arrow, nullable),
            id,
        ));
        if is_key {
            identifier_ids.push(id);
        }
        ids_by_name.insert(column.name().to_string(), id);
    }
    if legacy {
        let next = fields.len() as i32 + 1;
        let system_types = [
            PrimitiveType::Int,
            PrimitiveType::Long,
            PrimitiveType::Timestamptz,
        ];
        for (i, (name, ty)) in LEGACY_SYSTEM_COLUMNS.iter().zip(system_types).enumerate() {
            let id = next + i as i32;
            let arrow = system_column(name, TimeUnit::Microsecond)
                .map(|f| f.data_type().clone())
                .ok_or_else(|| Error::internal("unknown system column"))?;
            fields.push(Arc::new(NestedField::required(
                id,
                *name,
                Type::Primitive(ty),
            )));
            arrow_fields.push(with_field_id(Field::new(*name, arrow, false), id));
            ids_by_name.insert(name.to_string(), id);
        }
    }
    let invalid = |e: iceberg::Error| {
        Error::invalid_input("the Fluss schema cannot be expressed in Iceberg")
            .with_context("table", table.path.to_string())
            .with_source(e)
    };
    let schema = Schema::builder()
        .with_schema_id(0)
        .with_fields(fields)
        .with_identifier_field_ids(identifier_ids)
        .build()
        .map_err(invalid)?;

    let id_of = |name: &str| {
        ids_by_name.get(name).copied().ok_or_else(|| {
            Error::data_invalid(format!("key '{name}' is not a column of the table"))
                .with_context("table", table.path.to_string())
        })
    };
    let mut spec = UnboundPartitionSpec::builder().with_spec_id(0);
    for key in info.get_partition_keys().iter() {
        spec = spec
            .add_partition_field(id_of(key)?, key.clone(), Transform::Identity)
            .map_err(invalid)?;
    }
    let bucket_keys = info.get_bucket_keys();
    spec = match bucket_keys {
        [] if legacy => spec
            .add_partition_field(id_of("__bucket")?, "__bucket", Transform::Identity)
            .map_err(invalid)?,
        [] => spec,
        [key] => spec
            .add_partition_field(
                id_of(key)?,
                format!("{key}_bucket"),
                Transform::Bucket(info.get_num_buckets() as u32),
            )
            .map_err(invalid)?,
        _ => {
            return Err(Error::unsupported(
                "Iceberg tiering supports at most one bucket key (as Fluss does)",
            )
            .with_context("table", table.path.to_string()));
        }
    };
    let sort_order = if legacy {
        SortOrder::builder()
            .with_order_id(1)
            .with_sort_field(SortField {
                source_id: id_of("__offset")?,
                transform: Transform::Identity,
                direction: SortDirection::Ascending,
                null_order: NullOrder::First,
            })
            .build_unbound()
            .map_err(invalid)?
    } else {
        SortOrder::unsorted_order()
    };
    // As `IcebergLakeCatalog` sets them: every table and custom property, `iceberg.X`
    // as `X` and every other key as `fluss.<key>`; merge-on-read modes for primary keys.
    // Unlike Fluss, the lake catalog's own options (`table.datalake.iceberg.*`, which
    // may hold credentials) stay out of the table's metadata file, as Fluss's Paimon
    // tables leave out `table.datalake.paimon.*`.
    let mut properties = HashMap::new();
    for (key, value) in info
        .get_properties()
        .iter()
        .chain(info.get_custom_properties())
    {
        if key.starts_with("table.datalake.iceberg.") {
            continue;
        }
        match key.strip_prefix("iceberg.") {
            Some(iceberg_key) => properties.insert(iceberg_key.to_string(), value.clone()),
            None => properties.insert(format!("fluss.{key}"), value.clone()),
        };
    }
    if !pk.is_empty() {
        for key in ["write.delete.mode", "write.update.mode", "write.merge.mode"] {
            properties.insert(key.to_string(), "merge-on-read".to_string());
        }
    }
    Ok(IcebergTableLayout {
        schema,
        spec: spec.build(),
        sort_order,
        legacy,
        properties,
        arrow: Arc::new(ArrowSchema::new(arrow_fields)),
    })
}

/// A log batch of `bucket` as the lake's rows: its columns cast to the lake's types,
/// then, on legacy tables, `__bucket`, `__offset` (each row's log offset) and
/// `__timestamp` (the batch's commit time).
pub fn lake_rows(
    batch: &ChangelogBatch,
    bucket: i32,
    layout: &IcebergTableLayout,
) -> Result<RecordBatch> {
    let arrow = &layout.arrow;
    let rows = batch.batch.num_rows();
    let data = batch.batch.columns();
    let system = if layout.legacy {
        LEGACY_SYSTEM_COLUMNS.len()
    } else {
        0
    };
    if data.len() + system != arrow.fields().len() {
        return Err(Error::internal(
            "log batch columns do not match the Iceberg schema",
        ));
    }
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(arrow.fields().len());
    for (column, field) in data.iter().zip(arrow.fields()) {
        columns.push(if column.data_type() == field.data_type() {
            column.clone()
        } else {
            cast(column, field.data_type()).map_err(|e| {
                Error::internal(format!(
                    "cannot cast column '{}' to its Iceberg type",
                    field.name()
                ))
                .with_source(e)
            })?
        });
    }
    if layout.legacy {
        columns.push(Arc::new(Int32Array::from(vec![bucket; rows])));
        columns.push(Arc::new(Int64Array::from_iter_values(
            (0..rows as i64).map(|i| batch.first_offset + i),
        )));
        columns.push(Arc::new(
            TimestampMicrosecondArray::from(vec![
                batch.commit_timestamp.saturating_mul(1000);
                rows
            ])
            .with_timezone("+00:00"),
        ));
    }
    Ok(RecordBatch::try_new(arrow.clone(), columns)?)
}
