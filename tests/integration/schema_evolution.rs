//! `ALTER TABLE ... ADD COLUMN` on lake tables tiered before and after it, read by the
//! lake formats' own readers (pypaimon, pyiceberg): they see the new column, NULL in
//! the files written before it, as our union read does.

use serde_json::{Value, json};

use super::common;
use super::iceberg_interop::{Store, pyiceberg_read};
use super::pypaimon_interop::pypaimon_read;
use fluss_datafusion::source::LocalStoreOptions;

#[tokio::test]
async fn columns_added_between_tierings_are_read_by_pypaimon_and_pyiceberg() {
    let Some(python) = common::venv_python() else {
        return;
    };
    for format in ["paimon", "iceberg"] {
        let s = Store::with_options(LocalStoreOptions::default()).await;
        s.sql(&format!(
            "CREATE TABLE fluss.t (id BIGINT, name STRING) WITH ('bucket.num' = '2', \
             'table.datalake.enabled' = 'true', 'table.datalake.format' = '{format}')"
        ))
        .await;
        s.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')").await;
        s.sql("CALL fluss.tier('t')").await;
        s.sql("ALTER TABLE t ADD COLUMN score DECIMAL(10, 2)").await;
        s.sql("INSERT INTO t VALUES (3, 'c', 30.50)").await;
        s.sql("CALL fluss.tier('t')").await;
        s.sql("ALTER TABLE t ADD (note STRING)").await;
        s.sql("INSERT INTO t (id, name, note) VALUES (4, 'd', 'after')")
            .await;
        s.sql("CALL fluss.tier('t')").await;

        let theirs = match format {
            "paimon" => pypaimon_read(&python, &s.dir().join("lake/paimon"), "fluss.t"),
            _ => pyiceberg_read(&s.dir().join("lake/iceberg/fluss/t")).unwrap(),
        };
        let pick = |r: &Value| {
            let score = match &r["score"] {
                Value::Null => Value::Null,
                // pypaimon renders decimals as text, pyiceberg as numbers
                v => json!(v.to_string().trim_matches('"').parse::<f64>().unwrap()),
            };
            json!({"id": r["id"], "name": r["name"], "score": score, "note": r["note"]})
        };
        let their_rows = common::sort_rows(
            theirs["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(pick)
                .collect(),
        );
        let expected = vec![
            json!({"id": 1, "name": "a", "score": null, "note": null}),
            json!({"id": 2, "name": "b", "score": null, "note": null}),
            json!({"id": 3, "name": "c", "score": 30.5, "note": null}),
            json!({"id": 4, "name": "d", "score": null, "note": "after"}),
        ];
        assert_eq!(their_rows, expected, "{format}: {theirs}");
        let ours: Vec<Value> = s
            .rows("SELECT id, name, CAST(score AS DOUBLE) AS score, note FROM \"t$lake\"")
            .await;
        assert_eq!(ours, expected, "{format}: our lake read");
    }
}
