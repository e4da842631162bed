//! The store's commit record: where each bucket's log ended when its last statement
//! committed, in Fluss's own `data/high-watermark-checkpoint` file.
//!
//! A tablet server checkpoints each bucket's high watermark into that file of its data
//! directory (apache/fluss `ReplicaManager.HIGH_WATERMARK_CHECKPOINT_FILE_NAME`, format
//! of `OffsetCheckpointFile`: a version line `0`, an entry count, then one
//! `table_id [partition_id] bucket offset` line per bucket), and its log recovery never
//! truncates below it, as Kafka's never truncates below the high watermark. The
//! LocalStore writes the same file: a statement records the end of every bucket it
//! wrote here *before* it removes its intent (the commit point), and a rollback of an
//! uncommitted statement lowers its buckets' entries back before truncating.
//!
//! So a committed offset is never mistaken for a torn write: a bucket whose segments
//! end before its recorded end has lost committed batches, and reading it (or
//! appending to it) is an error naming the table, bucket, file and the offsets lost.
//! Bytes past the recorded end are a write that never committed (a crash mid-append),
//! the only bytes recovery may drop. A bucket without an entry (a store written before
//! this record, or by a tool that keeps none) is checked as before: only its framing.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::LocalStore;
use crate::error::{Error, Result};
use crate::source::BucketLocation;

/// `data/high-watermark-checkpoint`: the record's path under the store root (Fluss's
/// file name, in the store's data directory).
pub const COMMIT_RECORD_FILE: &str = "data/high-watermark-checkpoint";

/// Fluss's `OffsetCheckpointFile.CURRENT_VERSION`.
const VERSION: i32 = 0;

/// A bucket of any table: table id, partition id, bucket (Fluss's `TableBucket`).
pub(crate) type TableBucketKey = (i64, Option<i64>, i32);

/// Every bucket's committed log end, as the commit record holds them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CommittedEnds {
    ends: BTreeMap<TableBucketKey, i64>,
}

impl CommittedEnds {
    /// Parses the record's bytes (`file` names it in errors): every line must be what
    /// Fluss's `OffsetCheckpointFile` writes, and the count must match the entries,
    /// so a cut or damaged record is an error, never a record of fewer buckets.
    pub(crate) fn parse(bytes: &[u8], file: &str) -> Result<Self> {
        let bad = |line: usize, why: String| {
            Error::data_invalid(format!("commit record is damaged: {why}"))
                .with_context("file", file)
                .with_context("line", line)
        };
        let text = std::str::from_utf8(bytes).map_err(|_| bad(1, "not UTF-8 text".into()))?;
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
        let (_, version) = lines.next().ok_or_else(|| bad(1, "it is empty".into()))?;
        if version.parse::<i32>().ok() != Some(VERSION) {
            return Err(bad(
                1,
                format!("unknown version '{version}' (expected {VERSION})"),
            ));
        }
        let (_, count) = lines
            .next()
            .ok_or_else(|| bad(2, "the entry count is missing".into()))?;
        let count: usize = count
            .parse()
            .map_err(|_| bad(2, format!("entry count '{count}' is not a number")))?;
        let mut ends = BTreeMap::new();
        let mut found = 0;
        for (number, line) in lines {
            if line.is_empty() {
                continue;
            }
            let numbers: Option<Vec<i64>> =
                line.split_whitespace().map(|p| p.parse().ok()).collect();
            let (key, offset) = match numbers.as_deref() {
                Some(&[table, bucket, offset]) => ((table, None, bucket), offset),
                Some(&[table, partition, bucket, offset]) => {
                    ((table, Some(partition), bucket), offset)
                }
                _ => {
                    return Err(bad(
                        number,
                        format!("'{line}' is not 'table_id [partition_id] bucket offset'"),
                    ));
                }
            };
            let bucket = i32::try_from(key.2)
                .map_err(|_| bad(number, format!("bucket {} is out of range", key.2)))?;
            if offset < 0 {
                return Err(bad(number, format!("offset {offset} is negative")));
            }
            ends.insert((key.0, key.1, bucket), offset);
            found += 1;
        }
        if found != count {
            return Err(bad(
                2,
                format!("it announces {count} entries but holds {found}"),
            ));
        }
        Ok(Self { ends })
    }

    /// The record's bytes, as Fluss writes them.
    pub(crate) fn to_bytes(&self) -> Bytes {
        let mut text = format!("{VERSION}\n{}\n", self.ends.len());
        for ((table, partition, bucket), offset) in &self.ends {
            match partition {
                Some(p) => text.push_str(&format!("{table} {p} {bucket} {offset}\n")),
                None => text.push_str(&format!("{table} {bucket} {offset}\n")),
            }
        }
        Bytes::from(text)
    }

    /// The committed end of a table's bucket, if the record has one.
    pub(crate) fn get(&self, table_id: i64, bucket: &BucketLocation) -> Option<i64> {
        self.ends
            .get(&(table_id, bucket.partition_id(), bucket.bucket))
            .copied()
    }

    /// Records the committed end of a bucket.
    pub(crate) fn set(&mut self, key: TableBucketKey, end: i64) {
        self.ends.insert(key, end);
    }

    /// Forgets the buckets of a dropped table (or of one partition of it).
    pub(crate) fn forget(&mut self, table_id: i64, partition_id: Option<i64>) {
        self.ends.retain(|(table, partition, _), _| {
            *table != table_id || (partition_id.is_some() && *partition != partition_id)
        });
    }
}

impl LocalStore {
    /// The commit record as stored now (none yet: no entries).
    pub(crate) async fn committed_ends(&self) -> Result<CommittedEnds> {
        match self.storage.read_optional(COMMIT_RECORD_FILE).await? {
            Some(bytes) => CommittedEnds::parse(&bytes, COMMIT_RECORD_FILE),
            None => Ok(CommittedEnds::default()),
        }
    }

    /// Replaces the commit record (atomically and durably).
    pub(crate) async fn store_committed_ends(&self, ends: &CommittedEnds) -> Result<()> {
        self.storage
            .put_atomic(COMMIT_RECORD_FILE, ends.to_bytes())
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_fluss_writes_and_writes_it_back() {
        // OffsetCheckpointFile's own example, with a bucket of an unpartitioned table
        let text = "0\n3\n150001 20241121 0 10\n150001 20241121 1 5\n7 2 99\n";
        let ends = CommittedEnds::parse(text.as_bytes(), "f").expect("Fluss's format");
        let plain = BucketLocation {
            bucket: 2,
            partition: None,
        };
        assert_eq!(ends.get(7, &plain), Some(99));
        let partitioned = BucketLocation {
            bucket: 1,
            partition: Some((20241121, "p".into())),
        };
        assert_eq!(ends.get(150001, &partitioned), Some(5));
        let again = CommittedEnds::parse(&ends.to_bytes(), "f").expect("round trip");
        assert_eq!(again, ends);
    }

    #[test]
    fn a_damaged_record_is_an_error_naming_file_and_line() {
        for (text, line, why) in [
            ("", "1", "empty"),
            ("1\n0\n", "1", "unknown version"),
            ("0\n2\n7 0 5\n", "2", "announces 2 entries but holds 1"),
            ("0\n1\n7 0\n", "3", "is not 'table_id"),
            ("0\n1\n7 0 -5\n", "3", "negative"),
            ("0\n1\n7 0 5", "", ""),
        ] {
            let outcome = CommittedEnds::parse(text.as_bytes(), "data/x");
            if why.is_empty() {
                outcome.expect("a last line without a newline is whole");
                continue;
            }
            let e = outcome.expect_err(text);
            assert!(e.to_string().contains(why), "{text:?}: {e}");
            assert_eq!(e.context_value("file"), Some("data/x"));
            assert_eq!(e.context_value("line"), Some(line), "{text:?}");
        }
    }

    #[test]
    fn forgetting_a_table_or_a_partition() {
        let mut ends = CommittedEnds::default();
        ends.set((1, None, 0), 5);
        ends.set((2, Some(10), 0), 6);
        ends.set((2, Some(11), 0), 7);
        ends.forget(2, Some(10));
        assert_eq!(ends.ends.len(), 2);
        ends.forget(2, None);
        assert_eq!(ends.ends.len(), 1);
    }
}
