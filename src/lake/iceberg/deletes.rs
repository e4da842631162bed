//! Checks of a snapshot's delete files before the `iceberg` reader applies them. Its
//! reader would turn two kinds of bad equality-delete files into wrong answers
//! (iceberg 0.10.1, `arrow/caching_delete_file_loader.rs`): a manifest entry with no
//! equality ids panics (`task.equality_ids.clone().unwrap()`), and a file that lacks
//! the column of an equality id is read through schema evolution, which fills the
//! missing column with nulls, so the delete matches no row and deleted rows come back
//! with no error. Both are refused here, naming the delete file.

use std::collections::{BTreeSet, HashMap};

use iceberg::scan::FileScanTask;
use iceberg::spec::DataContentType;
use iceberg::table::Table;
use parquet58::file::metadata::ParquetMetaDataReader;

use crate::error::{Error, Result};

/// Checks every equality-delete file of `tasks`: it names equality ids, each id is a
/// primitive column of the table, and the file holds a column of each id.
pub(super) async fn check_delete_files(table: &Table, tasks: &[FileScanTask]) -> Result<()> {
    let name = table.identifier().to_string();
    let mut equality_files: HashMap<&str, &Option<Vec<i32>>> = HashMap::new();
    for task in tasks {
        for delete in &task.deletes {
            if delete.file_type == DataContentType::EqualityDeletes {
                equality_files.insert(&delete.file_path, &delete.equality_ids);
            }
        }
    }
    let schema = table.metadata().current_schema();
    for (path, ids) in equality_files {
        let bad = |message: String| {
            Error::data_invalid(message)
                .with_context("table", &name)
                .with_context("file", path)
        };
        let ids = match ids {
            Some(ids) if !ids.is_empty() => ids,
            _ => {
                return Err(bad(
                    "an Iceberg equality-delete file names no equality field ids".to_string(),
                ));
            }
        };
        for id in ids {
            let known = schema
                .field_by_id(*id)
                .is_some_and(|f| f.field_type.as_primitive_type().is_some());
            if !known {
                return Err(bad(format!(
                    "an Iceberg equality-delete file names field id {id}, which is not a \
                     primitive column of the table's schema"
                )));
            }
        }
        let found = file_field_ids(table, path).await?;
        let missing: Vec<i32> = ids
            .iter()
            .copied()
            .filter(|id| !found.contains(id))
            .collect();
        if !missing.is_empty() {
            return Err(bad(format!(
                "an Iceberg equality-delete file has no column with field id {missing:?} \
                 (it holds field ids {found:?}); applying it would delete nothing"
            )));
        }
    }
    Ok(())
}

/// The field ids (`PARQUET:field_id`) of a parquet file's top-level columns.
async fn file_field_ids(table: &Table, path: &str) -> Result<BTreeSet<i32>> {
    let name = table.identifier().to_string();
    let bytes = super::delete_reader::read_delete_file(table, path).await?;
    let metadata = ParquetMetaDataReader::new()
        .parse_and_finish(&bytes)
        .map_err(|e| {
            Error::data_invalid("an Iceberg delete file is not a readable parquet file")
                .with_context("table", &name)
                .with_context("file", path)
                .with_source(e)
        })?;
    Ok(metadata
        .file_metadata()
        .schema_descr()
        .root_schema()
        .get_fields()
        .iter()
        .filter(|f| f.get_basic_info().has_id())
        .map(|f| f.get_basic_info().id())
        .collect())
}
