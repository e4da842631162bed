//! What a Fluss table is, as every layer sees it: [`FlussTable`] (Fluss's `TableInfo`
//! and every schema version), its buckets and their offsets. The value types the
//! sources, the lake formats and the union read share live here, below all three,
//! so none of them imports another to name a table.

pub mod partition_value;

/// The system partition an auto-partitioned Paimon table may keep in its lake for
/// rows of expired partitions (`PartitionUtils.HISTORICAL_PARTITION_VALUE`): it has
/// no Fluss data.
pub const HISTORICAL_PARTITION: &str = "__historical__";

use std::sync::Arc;

use fluss::metadata::{DataLakeFormat, TableInfo, TablePath};

use crate::error::{Error, Result};
use crate::log::{LogRange, SchemaHistory};

/// A table as a source describes it: Fluss's `TableInfo` plus every schema version
/// (log batches written under older schema ids must still decode).
#[derive(Debug, Clone)]
pub struct FlussTable {
    /// `database.table`.
    pub path: TablePath,
    /// Table metadata at its latest schema.
    pub info: TableInfo,
    /// All schema versions by id.
    pub schemas: Arc<SchemaHistory>,
}

impl FlussTable {
    /// The table id.
    pub fn table_id(&self) -> i64 {
        self.info.get_table_id()
    }

    /// Checks what a reader relies on before it plans anything: a known lake format,
    /// a bucket count it can enumerate, and keys that name columns. Sources call it
    /// when they load a table, so a damaged registration fails at open naming the
    /// file instead of hiding the log or the lake.
    pub fn validate(&self) -> Result<()> {
        let info = &self.info;
        let buckets = info.get_num_buckets();
        if !(1..=MAX_BUCKETS).contains(&buckets) {
            return Err(Error::data_invalid(format!(
                "bucket count {buckets} is out of range (1..={MAX_BUCKETS})"
            )));
        }
        if let Some(format) = info.get_properties().get(LAKE_FORMAT_PROPERTY)
            && format.parse::<DataLakeFormat>().is_err()
        {
            return Err(Error::data_invalid(format!(
                "unknown '{LAKE_FORMAT_PROPERTY}' value '{format}' (expected paimon, iceberg or lance)"
            )));
        }
        let columns = info.get_schema().column_names();
        let keys = info
            .get_bucket_keys()
            .iter()
            .map(|k| ("bucket key", k))
            .chain(
                info.get_partition_keys()
                    .iter()
                    .map(|k| ("partition key", k)),
            );
        for (kind, key) in keys {
            if !columns.contains(&key.as_str()) {
                return Err(Error::data_invalid(format!(
                    "{kind} '{key}' is not a column of the table"
                )));
            }
        }
        Ok(())
    }

    /// The table as it is once `schema` becomes its latest version, `schema_id`
    /// (`ALTER TABLE ... ADD` evolves the lake with it before it is written).
    pub fn with_schema(&self, schema_id: i32, schema: fluss::metadata::Schema) -> Result<Self> {
        let info = &self.info;
        let mut schemas = (*self.schemas).clone();
        schemas.insert(crate::log::SchemaVersion::new(schema_id, schema.clone())?);
        Ok(Self {
            path: self.path.clone(),
            info: TableInfo::new(
                self.path.clone(),
                info.get_table_id(),
                schema_id,
                schema,
                info.get_bucket_keys().to_vec(),
                info.get_partition_keys().clone(),
                info.get_num_buckets(),
                info.get_properties().clone(),
                info.get_custom_properties().clone(),
                info.get_comment().map(str::to_string),
                info.get_created_time(),
                info.get_modified_time(),
            ),
            schemas: Arc::new(schemas),
        })
    }

    /// The lake format, when `table.datalake.enabled` is true.
    pub fn lake_format(&self) -> Option<DataLakeFormat> {
        let enabled = self
            .info
            .get_properties()
            .get("table.datalake.enabled")
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if !enabled {
            return None;
        }
        self.configured_lake_format()
    }

    /// The lake format from properties even when the lake is disabled (bucketing).
    /// [`FlussTable::validate`] has checked that the value parses.
    pub fn configured_lake_format(&self) -> Option<DataLakeFormat> {
        self.info
            .get_properties()
            .get(LAKE_FORMAT_PROPERTY)
            .and_then(|f| f.parse().ok())
    }
}

/// Property keys (lower-cased) holding any of these are credentials and never served. The
/// list is that of Fluss's (and Flink's) `GlobalConfiguration.SENSITIVE_KEYS`, plus the
/// object-store key names Fluss's filesystem plugins use.
const SENSITIVE_KEY_PARTS: &[&str] = &[
    "password",
    "secret",
    "fs.azure.account.key",
    "apikey",
    "api-key",
    "auth-params",
    "service-key",
    "token",
    "basic-auth",
    "jaas.config",
    "http-headers",
    "access-key",
    "access.key",
    "accesskey",
    "credential",
    "private-key",
    "private.key",
];

/// Whether a table property is credential-like (its key names a password, secret,
/// token, access key, ...): such properties never leave the process that holds them
/// (a shipped plan's table, a served registration).
pub fn is_sensitive_property(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SENSITIVE_KEY_PARTS.iter().any(|part| key.contains(part))
}

/// Table property naming the lake format (`paimon`, `iceberg`, `lance`).
pub const LAKE_FORMAT_PROPERTY: &str = "table.datalake.format";

/// Most buckets a table may have: Fluss's `max.bucket.num` default. A registration
/// claiming more is damaged (every bucket is listed when a query is planned).
pub const MAX_BUCKETS: i32 = 128_000;

/// One bucket of a table or of one of its partitions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct BucketLocation {
    /// Partition id and name, for partitioned tables.
    pub partition: Option<(i64, String)>,
    /// Bucket id.
    pub bucket: i32,
}

impl BucketLocation {
    /// The partition id, if any.
    pub fn partition_id(&self) -> Option<i64> {
        self.partition.as_ref().map(|(id, _)| *id)
    }
}

/// Earliest offset and high watermark of a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BucketOffsets {
    /// First offset still in the log.
    pub earliest: i64,
    /// Offset after the last complete batch (exclusive).
    pub high_watermark: i64,
}

/// The wall clock in milliseconds since the epoch, as Fluss stamps creation and
/// modification times and Paimon commit identifiers.
pub(crate) fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// The log range a bucket contributes: from the offset tiered into the snapshot (or
/// the earliest offset when nothing of the bucket is tiered) to the high watermark.
///
/// The lake holds exactly the offsets below `tiered`, so the log must still hold
/// `[tiered, high watermark)`: if retention removed offsets the lake never got, or
/// the lake claims offsets the log never had, the union would silently lose or
/// duplicate rows. Both are errors naming the range.
pub fn bucket_range(tiered: Option<i64>, offsets: BucketOffsets) -> Result<LogRange> {
    let BucketOffsets {
        earliest,
        high_watermark,
    } = offsets;
    if earliest < 0 || high_watermark < earliest {
        return Err(Error::data_invalid(format!(
            "bucket offsets are inconsistent: earliest {earliest}, high watermark {high_watermark}"
        )));
    }
    let Some(tiered) = tiered else {
        return Ok(LogRange::new(earliest, high_watermark));
    };
    if tiered < earliest {
        return Err(Error::data_invalid(format!(
            "offsets [{tiered}, {earliest}) are neither in the lake snapshot nor in the log: \
             the log starts at {earliest} but the lake holds offsets below {tiered} only"
        ))
        .with_context("missing_offsets", format!("[{tiered}, {earliest})")));
    }
    if tiered > high_watermark {
        return Err(Error::data_invalid(format!(
            "the lake snapshot claims offsets up to {tiered} but the log ends at {high_watermark}"
        )));
    }
    Ok(LogRange::new(tiered, high_watermark))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(earliest: i64, high_watermark: i64) -> BucketOffsets {
        BucketOffsets {
            earliest,
            high_watermark,
        }
    }

    #[test]
    fn a_bucket_reads_from_its_tiered_offset_or_the_earliest() {
        assert_eq!(
            bucket_range(Some(24), offsets(0, 40)).unwrap(),
            LogRange::new(24, 40)
        );
        assert_eq!(
            bucket_range(None, offsets(10, 40)).unwrap(),
            LogRange::new(10, 40)
        );
        assert_eq!(
            bucket_range(Some(40), offsets(40, 40)).unwrap(),
            LogRange::new(40, 40)
        );
    }

    #[test]
    fn a_log_that_no_longer_covers_the_tiered_offset_is_an_error() {
        let e = bucket_range(Some(24), offsets(30, 40)).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::DataInvalid);
        assert_eq!(e.context_value("missing_offsets"), Some("[24, 30)"));
    }

    #[test]
    fn a_tiered_offset_past_the_log_end_is_an_error() {
        let e = bucket_range(Some(1000), offsets(0, 40)).unwrap_err();
        assert!(e.to_string().contains("up to 1000"), "{e}");
    }
}
