//! Paths of the LocalStore layout (docs/DESIGN.md "LocalStore"): ZooKeeper znodes as JSON
//! files under `zk/`, tablet-server logs under `data/`, lake offsets under `remote/`.

use fluss::metadata::TablePath;

use crate::error::{Error, Result};

/// Checks a database or table name the way Fluss does (`TablePath.detectInvalidName`:
/// ASCII letters, digits, `_` and `-`, at most 200 chars, not `.`/`..`), so no name can
/// escape the store root.
pub fn validate_name(kind: &str, name: &str) -> Result<()> {
    if let Some(reason) = TablePath::detect_invalid_name(name) {
        return Err(Error::invalid_input(format!(
            "invalid {kind} name '{name}': {reason}"
        )));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(Error::invalid_input(format!(
            "invalid {kind} name '{name}': only ASCII letters, digits, '_' and '-' are allowed"
        )));
    }
    Ok(())
}

/// Checks a partition name (values joined by `$`; each value `[A-Za-z0-9_-]`).
pub fn validate_partition_name(name: &str) -> Result<()> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'$')
    {
        return Err(Error::invalid_input(format!(
            "invalid partition name '{name}': values may only contain ASCII letters, digits, '_' and '-'"
        )));
    }
    Ok(())
}

/// `zk/metadata/databases`.
pub fn databases_dir() -> String {
    "zk/metadata/databases".to_string()
}

/// `zk/metadata/databases/<db>.json`.
pub fn database_node(db: &str) -> String {
    format!("zk/metadata/databases/{db}.json")
}

/// `zk/metadata/databases/<db>/tables`.
pub fn tables_dir(db: &str) -> String {
    format!("zk/metadata/databases/{db}/tables")
}

/// `zk/metadata/databases/<db>/tables/<table>.json`.
pub fn table_node(path: &TablePath) -> String {
    format!("{}/{}.json", tables_dir(path.database()), path.table())
}

/// `zk/metadata/databases/<db>/tables/<table>` (schemas, partitions).
pub fn table_dir(path: &TablePath) -> String {
    format!("{}/{}", tables_dir(path.database()), path.table())
}

/// `.../tables/<table>/schemas`.
pub fn schemas_dir(path: &TablePath) -> String {
    format!("{}/schemas", table_dir(path))
}

/// `.../tables/<table>/schemas/<id>.json`.
pub fn schema_node(path: &TablePath, schema_id: i32) -> String {
    format!("{}/{schema_id}.json", schemas_dir(path))
}

/// `.../tables/<table>/partitions`.
pub fn partitions_dir(path: &TablePath) -> String {
    format!("{}/partitions", table_dir(path))
}

/// `.../tables/<table>/partitions/<name>.json`.
pub fn partition_node(path: &TablePath, partition_name: &str) -> String {
    format!("{}/{partition_name}.json", partitions_dir(path))
}

/// `zk/metadata/table_seqid.json`: the next table id (Curator counter).
pub fn table_seqid_node() -> String {
    "zk/metadata/table_seqid.json".to_string()
}

/// `zk/metadata/partition_seqid.json`: the next partition id.
pub fn partition_seqid_node() -> String {
    "zk/metadata/partition_seqid.json".to_string()
}

/// `zk/tabletservers/tables/<table_id>/laketable.json`.
pub fn lake_table_node(table_id: i64) -> String {
    format!("zk/tabletservers/tables/{table_id}/laketable.json")
}

/// `zk/tabletservers/tables/<table_id>/lake_tiering_pending.json`: a tiering round that
/// wrote its offsets file but has not registered its snapshot yet (crash recovery).
pub fn lake_tiering_pending_node(table_id: i64) -> String {
    format!("zk/tabletservers/tables/{table_id}/lake_tiering_pending.json")
}

/// `data/<db>/<table>-<table_id>`.
pub fn table_data_dir(path: &TablePath, table_id: i64) -> String {
    format!(
        "{}/{}-{table_id}",
        database_data_dir(path.database()),
        path.table()
    )
}

/// `data/<db>`: the log data of the database's tables.
pub fn database_data_dir(database: &str) -> String {
    format!("data/{database}")
}

/// `data/<db>/<table>-<id>/<partition>-p<pid>`: the logs of one partition.
pub fn partition_data_dir(path: &TablePath, table_id: i64, name: &str, id: i64) -> String {
    format!("{}/{name}-p{id}", table_data_dir(path, table_id))
}

/// `data/<db>/<table>-<id>[/<partition>-p<pid>]/log-<bucket>`.
pub fn bucket_dir(
    path: &TablePath,
    table_id: i64,
    partition: Option<(&str, i64)>,
    bucket: i32,
) -> String {
    match partition {
        None => format!("{}/log-{bucket}", table_data_dir(path, table_id)),
        Some((name, id)) => format!(
            "{}/log-{bucket}",
            partition_data_dir(path, table_id, name, id)
        ),
    }
}

/// `remote/lake/<db>/<table>-<id>/metadata`: lake offsets files.
pub fn lake_offsets_dir(path: &TablePath, table_id: i64) -> String {
    format!(
        "remote/lake/{}/{}-{table_id}/metadata",
        path.database(),
        path.table()
    )
}

/// Default Paimon warehouse of the LocalStore (relative to the root).
pub const DEFAULT_PAIMON_WAREHOUSE: &str = "lake/paimon";

/// Default Iceberg warehouse of the LocalStore (relative to the root), a "hadoop"
/// catalog: `<warehouse>/<db>/<table>/metadata/v<N>.metadata.json`.
pub const DEFAULT_ICEBERG_WAREHOUSE: &str = "lake/iceberg";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cannot_escape_the_root() {
        for bad in ["..", ".", "a/b", "a\\b", "", "x y", "t$lake", "../x"] {
            assert!(validate_name("table", bad).is_err(), "{bad}");
        }
        validate_name("table", "orders_2024-x").unwrap();
        assert!(validate_partition_name("2024-01-01$us").is_ok());
        assert!(validate_partition_name("../x").is_err());
    }

    #[test]
    fn paths_follow_the_fluss_layout() {
        let p = TablePath::new("db", "t");
        assert_eq!(bucket_dir(&p, 7, None, 2), "data/db/t-7/log-2");
        assert_eq!(
            bucket_dir(&p, 7, Some(("2024", 3)), 0),
            "data/db/t-7/2024-p3/log-0"
        );
        assert_eq!(table_node(&p), "zk/metadata/databases/db/tables/t.json");
        assert_eq!(
            schema_node(&p, 1),
            "zk/metadata/databases/db/tables/t/schemas/1.json"
        );
        assert_eq!(
            lake_table_node(7),
            "zk/tabletservers/tables/7/laketable.json"
        );
    }
}
