//! `TailCache`: primary-key log tails folded once and kept between queries.
//!
//! A bucket's log below a cut's high watermark never changes (a LocalStore hides a
//! statement until it commits; a cluster's high watermark only moves over committed
//! records), so the fold of `[start, stop)` of a table id under one schema is a value.
//! A warm session (a dashboard refreshing, an application's repeated lookups, a
//! benchmark's runs) then reads, decodes and folds each tail once instead of once per
//! query. A fold holds the columns its query read; a later query reuses it when they
//! include every column it needs, and folds its own otherwise. Folds are evicted least
//! recently used first when the cache would pass its byte capacity; a capacity of 0
//! keeps nothing.
//!
//! One cache belongs to one source's catalog ([`crate::FlussCatalog`]), so a tail read
//! with one source's credentials is never served to another.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::ChangelogFold;

/// Bytes of folds a catalog keeps by default.
pub const DEFAULT_TAIL_CACHE_BYTES: usize = 256 << 20;

/// What a fold was made from: the table (its id, so a table created again under its
/// name never matches), the schema rows were decoded with, the bucket and the range.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TailKey {
    /// Fluss table id.
    pub table_id: i64,
    /// Schema the rows were decoded with (the table's latest at planning).
    pub schema_id: i32,
    /// Partition id, for partitioned tables.
    pub partition_id: Option<i64>,
    /// Bucket id.
    pub bucket: i32,
    /// First offset folded.
    pub start: i64,
    /// Offset after the last one folded.
    pub stop: i64,
}

/// A cached fold and the table columns it holds, in its schema's order.
#[derive(Debug, Clone)]
pub(crate) struct CachedFold {
    /// The fold.
    pub fold: Arc<ChangelogFold>,
    /// Table column indexes of the fold's columns.
    pub columns: Vec<usize>,
}

impl CachedFold {
    /// Positions in the fold's columns of the table columns `wanted`, or `None` when
    /// the fold lacks one.
    pub(crate) fn positions(&self, wanted: &[usize]) -> Option<Vec<usize>> {
        wanted
            .iter()
            .map(|c| self.columns.iter().position(|h| h == c))
            .collect()
    }
}

#[derive(Debug)]
struct Entry {
    cached: CachedFold,
    bytes: usize,
    last_used: u64,
}

#[derive(Debug, Default)]
struct Entries {
    by_key: HashMap<TailKey, Vec<Entry>>,
    bytes: usize,
    clock: u64,
}

/// Folded tails by `TailKey`, at most `capacity` bytes of them.
pub struct TailCache {
    capacity: usize,
    entries: Mutex<Entries>,
}

/// Sizes only: the folds hold table rows.
impl std::fmt::Debug for TailCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TailCache")
            .field("capacity", &self.capacity)
            .field("bytes", &self.bytes())
            .finish()
    }
}

impl TailCache {
    /// A cache of at most `capacity` bytes of folds (0: none are kept).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Mutex::new(Entries::default()),
        }
    }

    /// Bytes the cache may hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes of folds held now.
    pub fn bytes(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.bytes)
    }

    /// A fold of `key` holding every table column of `columns`, if one is kept.
    pub(crate) fn get(&self, key: &TailKey, columns: &[usize]) -> Option<CachedFold> {
        let mut entries = self.entries.lock().ok()?;
        entries.clock += 1;
        let now = entries.clock;
        let entry = entries
            .by_key
            .get_mut(key)?
            .iter_mut()
            .filter(|e| e.cached.positions(columns).is_some())
            // the narrowest fold that serves: its live rows are the cheapest to project
            .min_by_key(|e| e.cached.columns.len())?;
        entry.last_used = now;
        Some(entry.cached.clone())
    }

    /// Keeps `fold` of `key` holding the table columns `columns`, evicting the least
    /// recently used folds to make room; a fold larger than the whole cache is not
    /// kept.
    pub(crate) fn insert(&self, key: TailKey, columns: Vec<usize>, fold: Arc<ChangelogFold>) {
        let bytes = fold.memory_size();
        if bytes > self.capacity {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let served = entries
            .by_key
            .get(&key)
            .is_some_and(|held| held.iter().any(|e| e.cached.positions(&columns).is_some()));
        if served {
            return;
        }
        while entries.bytes + bytes > self.capacity && entries.evict_oldest() {}
        entries.clock += 1;
        let last_used = entries.clock;
        entries.bytes += bytes;
        entries.by_key.entry(key).or_default().push(Entry {
            cached: CachedFold { fold, columns },
            bytes,
            last_used,
        });
    }
}

impl Entries {
    /// Drops the least recently used fold; false when there is none.
    fn evict_oldest(&mut self) -> bool {
        let oldest = self
            .by_key
            .iter()
            .flat_map(|(key, held)| held.iter().enumerate().map(move |(i, e)| (key, i, e)))
            .min_by_key(|(_, _, e)| e.last_used)
            .map(|(key, i, _)| (key.clone(), i));
        let Some((key, i)) = oldest else {
            return false;
        };
        if let Some(held) = self.by_key.get_mut(&key) {
            let entry = held.swap_remove(i);
            self.bytes -= entry.bytes;
            if held.is_empty() {
                self.by_key.remove(&key);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use fluss::record::ChangeType;

    fn fold(rows: i64) -> Arc<ChangelogFold> {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(Int64Array::from_iter_values(0..rows))],
        )
        .unwrap();
        let mut fold = ChangelogFold::new(schema, vec![0]).unwrap();
        fold.apply(&batch, &vec![ChangeType::Insert; rows as usize])
            .unwrap();
        Arc::new(fold)
    }

    fn key(bucket: i32, stop: i64) -> TailKey {
        TailKey {
            table_id: 1,
            schema_id: 1,
            partition_id: None,
            bucket,
            start: 0,
            stop,
        }
    }

    #[test]
    fn a_fold_serves_queries_of_fewer_columns_of_the_same_range() {
        let cache = TailCache::new(1 << 20);
        cache.insert(key(0, 10), vec![0, 2, 5], fold(10));
        let hit = cache.get(&key(0, 10), &[5, 0]).expect("a hit");
        assert_eq!(hit.positions(&[5, 0]), Some(vec![2, 0]));
        assert!(cache.get(&key(0, 10), &[1]).is_none());
        // another range of the bucket, another bucket
        assert!(cache.get(&key(0, 11), &[0]).is_none());
        assert!(cache.get(&key(1, 10), &[0]).is_none());
        // a narrower fold of a served range is not kept twice
        let before = cache.bytes();
        cache.insert(key(0, 10), vec![0], fold(10));
        assert_eq!(cache.bytes(), before);
    }

    #[test]
    fn the_least_recently_used_folds_make_room() {
        let one = fold(1000).memory_size();
        let cache = TailCache::new(one * 2 + one / 2);
        cache.insert(key(0, 1), vec![0], fold(1000));
        cache.insert(key(1, 1), vec![0], fold(1000));
        assert!(cache.get(&key(0, 1), &[0]).is_some());
        cache.insert(key(2, 1), vec![0], fold(1000));
        assert!(cache.get(&key(0, 1), &[0]).is_some());
        assert!(cache.get(&key(1, 1), &[0]).is_none());
        assert!(cache.get(&key(2, 1), &[0]).is_some());
        assert!(cache.bytes() <= cache.capacity());
        // nothing is kept by a cache of no bytes
        let none = TailCache::new(0);
        none.insert(key(0, 1), vec![0], fold(10));
        assert!(none.get(&key(0, 1), &[0]).is_none());
    }
}
