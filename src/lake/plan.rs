//! What a lake plan is made of: plain, serializable values (as iceberg-rust's
//! `FileScanTask`s are), so planning is apart from reading and a plan can travel.
//!
//! A [`LakeSplit`] is one (partition, bucket) group of data files. Files that are
//! read as they are ([`LakeRead::Parquet`]) go to DataFusion's parquet source, with
//! a [`ColumnMapping`] saying how their columns map to the table's; the rest
//! ([`LakeRead::MergeOnRead`]) go back to the lake format's own reader as a
//! [`MergeTask`].

use serde::{Deserialize, Serialize};

use crate::lake::predicate::LakePredicate;

/// What the provider asks a lake to plan.
#[derive(Debug, Clone)]
pub struct LakeScanRequest {
    /// The snapshot to read (the readable snapshot of the cut).
    pub snapshot_id: i64,
    /// Prunes partitions, buckets and files (never rows: the caller re-applies it).
    pub filter: Option<LakePredicate>,
    /// Whether the Fluss table has a primary key (its splits need merging unless the
    /// lake says they hold one version per key).
    pub primary_key: bool,
}

/// The splits of one pinned snapshot.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LakePlan {
    /// The snapshot the plan is pinned to.
    pub snapshot_id: i64,
    /// Splits after pruning.
    pub splits: Vec<LakeSplit>,
}

/// One data file of a split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LakeFile {
    /// Absolute path or URL.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Rows in the file (before deletes).
    pub rows: i64,
}

/// How the columns of a plain data file map to the table's columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColumnMapping {
    /// By column name (Paimon).
    ByName,
    /// By field id (`PARQUET:field_id`, Iceberg): each column name of the lake's
    /// current schema with its field id. A file written before a rename holds the
    /// column under its old name, and perhaps another column under the new one.
    ByFieldId(Vec<(String, i32)>),
}

/// A split only the lake format's reader can read (overlapping key levels, delete
/// rows or files, deletion vectors), in the format's own serialized form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeTask {
    /// The format's serialized split.
    pub payload: Vec<u8>,
    /// Rows in its files (an upper bound of what the merge yields).
    pub rows: i64,
}

/// A primary-key split whose sorted runs are plain parquet files the provider merges
/// itself (Paimon's key-value files under its deduplicate merge engine): every file
/// holds one row per key with the row's kind in [`Self::row_kind_column`], and a
/// key's newest row is its version.
///
/// Every run streams once through DataFusion's parquet source: the newer runs first,
/// newest first and unfiltered, each row kept when no run streamed before it holds
/// its key (its key is then recorded in a hash of keys), then the base (row-group and
/// page pruning, filters allowed), each row kept when no newer run holds its key;
/// always only when the Fluss tail never touched it. A hash of keys instead of a
/// k-way merge by key: no per-row comparison across runs, and memory follows the
/// newer runs' keys, not their rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedRuns {
    /// The oldest sorted run (one level, or one file): unique keys, every row older
    /// than every row of [`Self::newer`].
    pub base: Vec<LakeFile>,
    /// Whether the base may hold delete rows (their key is gone: they are dropped).
    pub base_has_deletes: bool,
    /// The newer files in the order their rows apply (ascending sequence numbers).
    pub newer: Vec<LakeFile>,
    /// The physical column holding each row's kind (Paimon `_VALUE_KIND`: 0 `+I`,
    /// 1 `-U`, 2 `+U`, 3 `-D`).
    pub row_kind_column: String,
}

/// How a split is read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LakeRead {
    /// Plain parquet files: every physical row is a live row.
    Parquet(ColumnMapping),
    /// Sorted runs of plain parquet files merged by key by the provider (columns by
    /// name).
    KeyedRuns(KeyedRuns),
    /// Merge-on-read through the lake format's reader.
    MergeOnRead(MergeTask),
}

/// One (partition, bucket) group of lake files of the pinned snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LakeSplit {
    /// Fluss partition name (values joined by `$`), for partitioned tables.
    pub partition_name: Option<String>,
    /// Lake bucket (= Fluss bucket); `-1` for bucket-unaware tables.
    pub bucket: i32,
    /// Data files.
    pub files: Vec<LakeFile>,
    /// How to read them.
    pub read: LakeRead,
    /// Row count (exact for plain splits, an upper bound for merged ones).
    pub rows: i64,
}

impl LakePlan {
    /// The data files of every split.
    pub fn file_count(&self) -> usize {
        self.splits.iter().map(|s| s.files.len()).sum()
    }

    /// How the plan's plain parquet files map their columns: one mapping per plan
    /// (a snapshot is read under one schema), `ByName` when there are none.
    pub fn parquet_mapping(&self) -> crate::error::Result<ColumnMapping> {
        let mut mappings = self.splits.iter().filter_map(|s| match &s.read {
            LakeRead::Parquet(mapping) => Some(mapping),
            LakeRead::KeyedRuns(_) | LakeRead::MergeOnRead(_) => None,
        });
        let Some(first) = mappings.next() else {
            return Ok(ColumnMapping::ByName);
        };
        if mappings.any(|m| m != first) {
            return Err(crate::error::Error::internal(
                "a lake plan maps the columns of its parquet files in two ways",
            ));
        }
        Ok(first.clone())
    }
}

impl LakeSplit {
    /// The merge task, for splits read by the lake format.
    pub fn merge_task(&self) -> Option<&MergeTask> {
        match &self.read {
            LakeRead::MergeOnRead(task) => Some(task),
            LakeRead::Parquet(_) | LakeRead::KeyedRuns(_) => None,
        }
    }

    /// Whether the split is plain parquet files whose every row is live.
    pub fn is_plain(&self) -> bool {
        matches!(self.read, LakeRead::Parquet(_))
    }

    /// The sorted runs, for splits the provider merges by key.
    pub fn keyed_runs(&self) -> Option<&KeyedRuns> {
        match &self.read {
            LakeRead::KeyedRuns(runs) => Some(runs),
            LakeRead::Parquet(_) | LakeRead::MergeOnRead(_) => None,
        }
    }
}
