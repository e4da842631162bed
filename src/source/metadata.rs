//! The coordinator's ZooKeeper metadata, in Fluss's own JSON encodings.
//!
//! Each type mirrors one serde of apache/fluss (`fluss-server/.../zk/data/*JsonSerde.java`,
//! `fluss-common/.../utils/json/TableBucketOffsetsJsonSerde.java`). Keys are written in
//! the order Java writes them (serde field order; `serde_json` with `preserve_order`),
//! optional keys only when present, and unknown keys are ignored on read, as Jackson's
//! `readTree` does. Schemas use fluss-rs's public `JsonSerde`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// `/metadata/databases/<db>` (`DatabaseRegistrationJsonSerde`, version 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatabaseRegistration {
    /// Always 1.
    pub version: i32,
    /// Optional comment.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub comment: Option<String>,
    /// User properties.
    pub custom_properties: BTreeMap<String, String>,
    /// Creation time, epoch millis.
    pub created_time: i64,
    /// Last modification time, epoch millis.
    pub modified_time: i64,
}

/// `/metadata/databases/<db>/tables/<table>` (`TableRegistrationJsonSerde`, version 1).
/// The schema is not here: it lives under `schemas/<id>`, the highest id being current.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableRegistration {
    /// Always 1.
    pub version: i32,
    /// Cluster-unique table id.
    pub table_id: i64,
    /// Optional comment.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub comment: Option<String>,
    /// Partition keys (omitted when empty).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub partition_key: Vec<String>,
    /// Bucket keys (omitted when empty: no bucket key).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub bucket_key: Vec<String>,
    /// Number of buckets (Fluss 1.0: of the partitions created from now on; a
    /// partition records its own, [`PartitionRegistration::bucket_count`]).
    pub bucket_count: i32,
    /// Table options (`table.*`).
    pub properties: BTreeMap<String, String>,
    /// User properties.
    pub custom_properties: BTreeMap<String, String>,
    /// Remote data directory (Fluss 1.0).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub remote_data_dir: Option<String>,
    /// Creation time, epoch millis.
    pub created_time: i64,
    /// Last modification time, epoch millis.
    pub modified_time: i64,
    /// How often `ALTER TABLE ... SET ('bucket.num')` changed the bucket count of a
    /// partitioned table (Fluss 1.0's `bucketCountEpoch`; absent = 0, never changed).
    #[serde(
        skip_serializing_if = "Option::is_none",
        default,
        alias = "bucket_layout_epoch"
    )]
    pub bucket_count_epoch: Option<i64>,
}

/// `/metadata/databases/<db>/tables/<table>/partitions/<name>` (`PartitionRegistrationJsonSerde`:
/// version 1, or 2 with the partition's own bucket count, as Fluss 1.0 writes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRegistration {
    /// 1, or 2 when `bucket_count` is written.
    pub version: i32,
    /// Owning table.
    pub table_id: i64,
    /// Cluster-unique partition id.
    pub partition_id: i64,
    /// Remote data directory (Fluss 1.0).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub remote_data_dir: Option<String>,
    /// The partition's own bucket count (Fluss 1.0, stamped when the partition is
    /// created; absent = the table's, valid only while the table's bucket count was
    /// never changed). Upstream's pre-release name `bucket_count_actual` is read too.
    #[serde(
        skip_serializing_if = "Option::is_none",
        default,
        alias = "bucket_count_actual"
    )]
    pub bucket_count: Option<i32>,
}

/// One entry of a v2 `laketable` znode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LakeSnapshotEntry {
    /// Lake snapshot id.
    pub snapshot_id: i64,
    /// Path of the offsets file tiered into this snapshot.
    pub tiered_offsets: String,
    /// Path of the readable offsets file, when the snapshot is readable.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub readable_offsets: Option<String>,
}

/// `/tabletservers/tables/<table_id>/laketable`: the lake snapshots Fluss registered for
/// a table (Java's `LakeTable`; named apart from the [`crate::lake::LakeTable`] trait).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegisteredLakeSnapshots {
    /// Registered snapshots, oldest first; the last is the latest.
    pub snapshots: Vec<LakeSnapshotEntry>,
    /// Offsets of a legacy (v1) znode, stored inline instead of in files.
    pub legacy: Option<LegacyLakeSnapshot>,
}

/// A version 1 `laketable` znode: one snapshot with inline bucket offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyLakeSnapshot {
    /// Lake snapshot id.
    pub snapshot_id: i64,
    /// `(partition id, bucket, exclusive end offset)`.
    pub buckets: Vec<(Option<i64>, i32, i64)>,
}

#[derive(Serialize, Deserialize)]
struct LakeTableV2 {
    version: i32,
    lake_snapshots: Vec<LakeSnapshotEntry>,
}

#[derive(Deserialize)]
struct LakeTableV1Bucket {
    #[serde(default)]
    partition_id: Option<i64>,
    bucket_id: i32,
    #[serde(default)]
    log_end_offset: Option<i64>,
}

#[derive(Deserialize)]
struct LakeTableV1 {
    snapshot_id: i64,
    #[serde(default)]
    buckets: Vec<LakeTableV1Bucket>,
}

impl RegisteredLakeSnapshots {
    /// Parses a v1 or v2 znode.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let value: serde_json::Value = serde_json::from_slice(bytes)?;
        match value.get("version").and_then(|v| v.as_i64()) {
            Some(2) => {
                let v2: LakeTableV2 = serde_json::from_value(value)?;
                Ok(Self {
                    snapshots: v2.lake_snapshots,
                    legacy: None,
                })
            }
            Some(1) => {
                let v1: LakeTableV1 = serde_json::from_value(value)?;
                Ok(Self {
                    snapshots: Vec::new(),
                    legacy: Some(LegacyLakeSnapshot {
                        snapshot_id: v1.snapshot_id,
                        buckets: v1
                            .buckets
                            .into_iter()
                            .filter_map(|b| {
                                b.log_end_offset.map(|o| (b.partition_id, b.bucket_id, o))
                            })
                            .collect(),
                    }),
                })
            }
            other => Err(Error::data_invalid(format!(
                "unsupported laketable version {other:?} (expected 1 or 2)"
            ))),
        }
    }

    /// Encodes as a v2 znode (legacy content is not re-encoded).
    pub fn to_json(&self) -> Result<Vec<u8>> {
        Ok(serde_json::to_vec(&LakeTableV2 {
            version: 2,
            lake_snapshots: self.snapshots.clone(),
        })?)
    }

    /// The newest snapshot that has readable offsets (scanning from the end, as
    /// `LakeTable.getLatestReadableSnapshot` does).
    pub fn latest_readable(&self) -> Option<&LakeSnapshotEntry> {
        self.snapshots
            .iter()
            .rev()
            .find(|s| s.readable_offsets.is_some())
    }

    /// The newest tiered snapshot.
    pub fn latest(&self) -> Option<&LakeSnapshotEntry> {
        self.snapshots.last()
    }
}

/// Per-bucket exclusive end offsets tiered into a lake snapshot (the `.offsets` file,
/// `TableBucketOffsetsJsonSerde`). Index = bucket id; `-1` = unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableBucketOffsets {
    /// Owning table.
    pub table_id: i64,
    /// Offsets of a non-partitioned table (`None` partition) or of each partition.
    pub offsets: BTreeMap<Option<i64>, Vec<i64>>,
}

#[derive(Serialize, Deserialize)]
struct PartitionOffsetsJson {
    partition_id: i64,
    bucket_offsets: Vec<i64>,
}

#[derive(Serialize, Deserialize)]
struct TableBucketOffsetsJson {
    version: i32,
    table_id: i64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    bucket_offsets: Option<Vec<i64>>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    partition_offsets: Option<Vec<PartitionOffsetsJson>>,
}

impl TableBucketOffsets {
    /// Offsets with no buckets yet.
    pub fn new(table_id: i64) -> Self {
        Self {
            table_id,
            offsets: BTreeMap::new(),
        }
    }

    /// The tiered end offset of a bucket, if known.
    pub fn get(&self, partition_id: Option<i64>, bucket: i32) -> Option<i64> {
        self.offsets
            .get(&partition_id)
            .and_then(|o| o.get(bucket as usize))
            .copied()
            .filter(|o| *o >= 0)
    }

    /// Sets the tiered end offset of a bucket, padding unknown buckets with `-1`.
    pub fn set(&mut self, partition_id: Option<i64>, bucket: i32, offset: i64) {
        let buckets = self.offsets.entry(partition_id).or_default();
        if buckets.len() <= bucket as usize {
            buckets.resize(bucket as usize + 1, -1);
        }
        buckets[bucket as usize] = offset;
    }

    /// Parses an `.offsets` file.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let json: TableBucketOffsetsJson = serde_json::from_slice(bytes)?;
        if json.version != 1 {
            return Err(Error::data_invalid(format!(
                "unsupported offsets file version {} (expected 1)",
                json.version
            )));
        }
        let values = json.bucket_offsets.iter().flatten().chain(
            json.partition_offsets
                .iter()
                .flatten()
                .flat_map(|p| &p.bucket_offsets),
        );
        if let Some(bad) = values.copied().find(|o| *o < -1) {
            return Err(Error::data_invalid(format!(
                "offsets file holds tiered offset {bad} (offsets are -1 for unknown, else >= 0)"
            )));
        }
        let mut offsets = BTreeMap::new();
        match (json.bucket_offsets, json.partition_offsets) {
            (Some(_), Some(_)) => {
                return Err(Error::data_invalid(
                    "offsets file has both bucket_offsets and partition_offsets",
                ));
            }
            (Some(b), None) => {
                offsets.insert(None, b);
            }
            (None, Some(p)) => {
                for partition in p {
                    offsets.insert(Some(partition.partition_id), partition.bucket_offsets);
                }
            }
            (None, None) => {}
        }
        Ok(Self {
            table_id: json.table_id,
            offsets,
        })
    }

    /// Checks that the offsets belong to `table_id` and name no bucket past
    /// `bucket_count` (a file of another table would pair wrong offsets with buckets).
    pub fn check_table(&self, table_id: i64, bucket_count: i32) -> Result<()> {
        if self.table_id != table_id {
            return Err(Error::data_invalid(format!(
                "offsets file belongs to table id {} (expected {table_id})",
                self.table_id
            )));
        }
        if let Some(buckets) = self
            .offsets
            .values()
            .find(|b| b.len() > bucket_count.max(0) as usize)
        {
            return Err(Error::data_invalid(format!(
                "offsets file lists {} buckets but the table has {bucket_count}",
                buckets.len()
            )));
        }
        Ok(())
    }

    /// Encodes the file exactly as Fluss writes it.
    pub fn to_json(&self) -> Result<Vec<u8>> {
        let mut json = TableBucketOffsetsJson {
            version: 1,
            table_id: self.table_id,
            bucket_offsets: None,
            partition_offsets: None,
        };
        if let Some(b) = self.offsets.get(&None) {
            json.bucket_offsets = Some(b.clone());
        }
        let partitions: Vec<PartitionOffsetsJson> = self
            .offsets
            .iter()
            .filter_map(|(p, b)| {
                p.map(|partition_id| PartitionOffsetsJson {
                    partition_id,
                    bucket_offsets: b.clone(),
                })
            })
            .collect();
        if !partitions.is_empty() {
            if json.bucket_offsets.is_some() {
                return Err(Error::internal(
                    "offsets mix a non-partitioned table with partitions",
                ));
            }
            json.partition_offsets = Some(partitions);
        }
        Ok(serde_json::to_vec(&json)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Verbatim strings from apache/fluss *JsonSerdeTest.java.
    #[test]
    fn table_registration_matches_fluss_json() {
        let json = r#"{"version":1,"table_id":1234,"comment":"first-table","partition_key":["a","b"],"bucket_key":["b","c"],"bucket_count":16,"properties":{},"custom_properties":{"custom-3":"\"300\""},"remote_data_dir":"file://local/remote","created_time":1735538268,"modified_time":1735538270}"#;
        let reg: TableRegistration = serde_json::from_str(json).unwrap();
        assert_eq!(reg.table_id, 1234);
        assert_eq!(reg.bucket_key, vec!["b", "c"]);
        assert_eq!(serde_json::to_string(&reg).unwrap(), json);
        let json2 = r#"{"version":1,"table_id":1234,"comment":"second-table","bucket_count":32,"properties":{"option-3":"300"},"custom_properties":{},"created_time":-1,"modified_time":-1}"#;
        let reg2: TableRegistration = serde_json::from_str(json2).unwrap();
        assert!(reg2.partition_key.is_empty());
        assert_eq!(serde_json::to_string(&reg2).unwrap(), json2);
        assert_eq!(reg2.bucket_count_epoch, None);
        // Fluss 1.0 counts bucket-count changes (pre-release name `bucket_layout_epoch`)
        let rescaled = json2.replace(
            r#""modified_time":-1}"#,
            r#""modified_time":-1,"bucket_layout_epoch":2}"#,
        );
        let reg3: TableRegistration = serde_json::from_str(&rescaled).unwrap();
        assert_eq!(reg3.bucket_count_epoch, Some(2));
    }

    #[test]
    fn database_and_partition_registrations_match_fluss_json() {
        let db = r#"{"version":1,"comment":"second-table","custom_properties":{},"created_time":-1,"modified_time":-1}"#;
        let reg: DatabaseRegistration = serde_json::from_str(db).unwrap();
        assert_eq!(serde_json::to_string(&reg).unwrap(), db);
        let p = r#"{"version":1,"table_id":246,"partition_id":135}"#;
        let reg: PartitionRegistration = serde_json::from_str(p).unwrap();
        assert_eq!(serde_json::to_string(&reg).unwrap(), p);
        // Fluss 1.0 (PartitionRegistrationJsonSerdeTest): version 2, its own bucket count
        let p = r#"{"version":2,"table_id":1234,"partition_id":5678,"remote_data_dir":"file://local/remote","bucket_count":8}"#;
        let reg: PartitionRegistration = serde_json::from_str(p).unwrap();
        assert_eq!(reg.bucket_count, Some(8));
        assert_eq!(serde_json::to_string(&reg).unwrap(), p);
        let pre_release = r#"{"version":2,"table_id":1,"partition_id":2,"bucket_count_actual":4}"#;
        let reg: PartitionRegistration = serde_json::from_str(pre_release).unwrap();
        assert_eq!(reg.bucket_count, Some(4));
    }

    #[test]
    fn lake_table_v2_and_legacy_v1() {
        let v2 = r#"{"version":2,"lake_snapshots":[{"snapshot_id":3,"tiered_offsets":"/path/to/tiered3","readable_offsets":"/path/to/readable3"},{"snapshot_id":4,"tiered_offsets":"/path/to/tiered4","readable_offsets":"/path/to/readable4"},{"snapshot_id":5,"tiered_offsets":"/path/to/tiered5"}]}"#;
        let table = RegisteredLakeSnapshots::from_json(v2.as_bytes()).unwrap();
        assert_eq!(table.latest().unwrap().snapshot_id, 5);
        assert_eq!(table.latest_readable().unwrap().snapshot_id, 4);
        assert_eq!(String::from_utf8(table.to_json().unwrap()).unwrap(), v2);
        let v1 = r#"{"version":1,"snapshot_id":11,"table_id":5,"buckets":[{"partition_id":1,"bucket_id":1,"log_end_offset":200},{"partition_id":1,"bucket_id":0,"log_end_offset":100}]}"#;
        let legacy = RegisteredLakeSnapshots::from_json(v1.as_bytes())
            .unwrap()
            .legacy
            .unwrap();
        assert_eq!(legacy.snapshot_id, 11);
        assert_eq!(legacy.buckets, vec![(Some(1), 1, 200), (Some(1), 0, 100)]);
        assert!(RegisteredLakeSnapshots::from_json(br#"{"version":3}"#).is_err());
    }

    #[test]
    fn offsets_files_match_fluss_json() {
        for json in [
            r#"{"version":1,"table_id":1}"#,
            r#"{"version":1,"table_id":5,"bucket_offsets":[100,-1,300,-1,500]}"#,
            r#"{"version":1,"table_id":7,"partition_offsets":[{"partition_id":1,"bucket_offsets":[100,-1,300]},{"partition_id":2,"bucket_offsets":[-1,400,-1,600]}]}"#,
        ] {
            let offsets = TableBucketOffsets::from_json(json.as_bytes()).unwrap();
            assert_eq!(String::from_utf8(offsets.to_json().unwrap()).unwrap(), json);
        }
        let o = TableBucketOffsets::from_json(
            br#"{"version":1,"table_id":5,"bucket_offsets":[100,-1,300]}"#,
        )
        .unwrap();
        assert_eq!(o.get(None, 0), Some(100));
        assert_eq!(o.get(None, 1), None);
        assert_eq!(o.get(None, 7), None);
        let mut built = TableBucketOffsets::new(9);
        built.set(None, 2, 40);
        assert_eq!(
            String::from_utf8(built.to_json().unwrap()).unwrap(),
            r#"{"version":1,"table_id":9,"bucket_offsets":[-1,-1,40]}"#
        );
    }
}
