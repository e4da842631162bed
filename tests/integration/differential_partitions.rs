//! The differential test's partitioned table `pl`: a log table `(id BIGINT, p STRING,
//! n INT)` partitioned by `p`, 2 buckets (bucket key `id`), driven by a random stream
//! of its own beside the main one's operations: appends to partitions `p0`..`p3`
//! (each created by its first write), tierings, and partitions dropped as expiry drops
//! them. The model keeps the tiered rows and the rows not tiered yet: a dropped
//! partition's tiered rows are still read from the lake while its untiered rows are
//! gone, and written again it is a new partition, read from its start.

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::arrow::array::{Int32Array, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema};
use fluss::metadata::{DataTypes, Schema, TableDescriptor, TablePath};
use fluss_datafusion::source::LocalStore;
use fluss_datafusion::tier;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::{Checker, Rendered};

/// A row of `pl`: `(id, p, n)`.
type PartitionedRow = (i64, String, Option<i32>);

const PARTITIONS: [&str; 4] = ["p0", "p1", "p2", "p3"];

/// One operation on `pl`.
#[derive(Debug, Clone)]
pub(super) enum PartitionOp {
    Append(Vec<PartitionedRow>),
    Tier,
    /// `ALTER TABLE pl DROP PARTITION (p = ...)`, as expiry drops one.
    Drop(String),
}

impl std::fmt::Display for PartitionOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartitionOp::Append(rows) => write!(f, "pl append {rows:?}"),
            PartitionOp::Tier => write!(f, "pl tier"),
            PartitionOp::Drop(p) => write!(f, "pl drop partition {p}"),
        }
    }
}

/// `pl` and its model.
pub(super) struct PartitionedLog {
    path: TablePath,
    rng: StdRng,
    /// Rows in the lake (as of the last tiering).
    lake: Vec<PartitionedRow>,
    /// Rows written since, in partitions that still exist.
    tail: Vec<PartitionedRow>,
    /// Partitions Fluss has.
    partitions: BTreeSet<String>,
    tiered: bool,
}

impl PartitionedLog {
    /// Creates `db.pl` with the run's table properties; its operations come from a
    /// generator seeded with `seed`, apart from the main one's.
    pub(super) async fn create(
        store: &LocalStore,
        seed: u64,
        properties: &[(&'static str, &'static str)],
    ) -> Self {
        let path = TablePath::new("db", "pl");
        let schema = Schema::builder()
            .column("id", DataTypes::bigint())
            .column("p", DataTypes::string())
            .column("n", DataTypes::int())
            .build()
            .unwrap();
        let mut descriptor = TableDescriptor::builder()
            .schema(schema)
            .partitioned_by(vec!["p".to_string()])
            .distributed_by(Some(2), vec!["id".to_string()])
            .property("table.datalake.enabled", "true");
        for (k, v) in properties {
            descriptor = descriptor.property(*k, *v);
        }
        store
            .create_table(&path, &descriptor.build().unwrap(), false)
            .await
            .unwrap();
        Self {
            path,
            rng: StdRng::seed_from_u64(seed ^ 0x9A27_1710),
            lake: Vec::new(),
            tail: Vec::new(),
            partitions: BTreeSet::new(),
            tiered: false,
        }
    }

    /// The next operation, or none this step (half the steps).
    pub(super) fn next_op(&mut self) -> Option<PartitionOp> {
        let rng = &mut self.rng;
        match rng.random_range(0..100) {
            0..35 => {
                let count = rng.random_range(1..=4);
                let rows = (0..count)
                    .map(|_| {
                        let p = PARTITIONS[rng.random_range(0..PARTITIONS.len())];
                        let n = rng.random_bool(0.9).then(|| rng.random_range(-20..20));
                        (rng.random_range(0..40), p.to_string(), n)
                    })
                    .collect();
                Some(PartitionOp::Append(rows))
            }
            35..43 => Some(PartitionOp::Tier),
            43..50 if !self.partitions.is_empty() => {
                let existing: Vec<&String> = self.partitions.iter().collect();
                Some(PartitionOp::Drop(
                    existing[rng.random_range(0..existing.len())].clone(),
                ))
            }
            _ => None,
        }
    }

    /// Writes `op` into the store and the model.
    pub(super) async fn apply(
        &mut self,
        store: &Arc<LocalStore>,
        op: &PartitionOp,
    ) -> fluss_datafusion::Result<()> {
        match op {
            PartitionOp::Append(rows) => {
                store.append(&self.path, &rows_batch(rows)).await?;
                self.tail.extend(rows.iter().cloned());
                self.partitions
                    .extend(rows.iter().map(|(_, p, _)| p.clone()));
            }
            PartitionOp::Tier => {
                tier(store, &self.path).await?;
                self.lake.append(&mut self.tail);
                self.tiered = true;
            }
            PartitionOp::Drop(p) => {
                store
                    .drop_partition(&self.path, &[("p".to_string(), p.clone())], false)
                    .await?;
                self.tail.retain(|(_, q, _)| q != p);
                self.partitions.remove(p);
            }
        }
        Ok(())
    }

    /// Reads `pl` every way a partition can be chosen and compares with the model.
    pub(super) async fn check(&mut self, checker: &mut Checker<'_>, step: usize) {
        let all: Vec<PartitionedRow> = self.lake.iter().chain(&self.tail).cloned().collect();
        let t = "fluss.db.pl";
        let select = "SELECT id, p, n FROM";
        let order = "ORDER BY id, p, n";
        checker
            .check(
                step,
                &format!("{select} {t} {order}"),
                rendered(&all, |_| true),
            )
            .await;
        let q = PARTITIONS[self.rng.random_range(0..PARTITIONS.len())];
        let r = PARTITIONS[self.rng.random_range(0..PARTITIONS.len())];
        let k = self.rng.random_range(-20..20);
        checker
            .check(
                step,
                &format!("{select} {t} WHERE p = '{q}' {order}"),
                rendered(&all, |row| row.1 == q),
            )
            .await;
        checker
            .check(
                step,
                &format!("{select} {t} WHERE p IN ('{q}', '{r}') {order}"),
                rendered(&all, |row| row.1 == q || row.1 == r),
            )
            .await;
        checker
            .check(
                step,
                &format!("{select} {t} WHERE p >= '{q}' AND n > {k} {order}"),
                rendered(&all, |row| {
                    row.1.as_str() >= q && row.2.is_some_and(|n| n > k)
                }),
            )
            .await;
        // count(*), answered from metadata on the LocalStore, and read on a cluster
        let count = |keep: &dyn Fn(&PartitionedRow) -> bool| {
            vec![vec![Some(
                all.iter().filter(|r| keep(r)).count().to_string(),
            )]]
        };
        checker
            .check(step, &format!("SELECT count(*) FROM {t}"), count(&|_| true))
            .await;
        checker
            .check(
                step,
                &format!("SELECT count(*) FROM {t} WHERE p = '{q}'"),
                count(&|row| row.1 == q),
            )
            .await;
        // LIMIT counts the lake's rows too (apache/fluss 3433)
        let limit = self.rng.random_range(1..8);
        checker
            .check(
                step,
                &format!("SELECT count(*) FROM (SELECT id FROM {t} WHERE p = '{q}' LIMIT {limit})"),
                vec![vec![Some(
                    all.iter()
                        .filter(|row| row.1 == q)
                        .count()
                        .min(limit)
                        .to_string(),
                )]],
            )
            .await;
        let mut per_partition: Vec<Rendered> = PARTITIONS
            .iter()
            .filter_map(|p| {
                let n = all.iter().filter(|r| r.1 == *p).count();
                (n > 0).then(|| vec![Some(p.to_string()), Some(n.to_string())])
            })
            .collect();
        per_partition.sort();
        checker
            .check(
                step,
                &format!("SELECT p, count(*) FROM {t} GROUP BY p ORDER BY p"),
                per_partition,
            )
            .await;
        if self.tiered {
            checker
                .check(
                    step,
                    &format!("{select} fluss.db.\"pl$lake\" {order}"),
                    rendered(&self.lake, |_| true),
                )
                .await;
        }
    }
}

/// The model rows `keep` selects, as `ORDER BY id, p, n` (NULLS LAST) renders them.
fn rendered(rows: &[PartitionedRow], keep: impl Fn(&PartitionedRow) -> bool) -> Vec<Rendered> {
    let mut rows: Vec<&PartitionedRow> = rows.iter().filter(|r| keep(r)).collect();
    rows.sort_by(|a, b| (a.0, &a.1, a.2.is_none(), a.2).cmp(&(b.0, &b.1, b.2.is_none(), b.2)));
    rows.into_iter()
        .map(|(id, p, n)| {
            vec![
                Some(id.to_string()),
                Some(p.clone()),
                n.map(|n| n.to_string()),
            ]
        })
        .collect()
}

fn rows_batch(rows: &[PartitionedRow]) -> RecordBatch {
    let schema = ArrowSchema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("p", DataType::Utf8, true),
        Field::new("n", DataType::Int32, true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.1.as_str()),
            )),
            Arc::new(Int32Array::from_iter(rows.iter().map(|r| r.2))),
        ],
    )
    .unwrap()
}
