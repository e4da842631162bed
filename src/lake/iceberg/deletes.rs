//! Planning's check of a snapshot's equality-delete files, from their manifest
//! entries alone: an entry that names no equality ids, or an id that is not a
//! primitive column of the table, is refused before any row is read, naming the
//! delete file (iceberg 0.10.1's own loader would panic on the first,
//! `arrow/caching_delete_file_loader.rs`). A file that lacks the column of an id is
//! refused by `delete_reader`, which reads it (iceberg's loader would fill the column
//! with nulls and delete nothing), so planning reads no delete file.

use std::collections::HashMap;

use iceberg::scan::FileScanTask;
use iceberg::spec::DataContentType;
use iceberg::table::Table;

use crate::error::{Error, Result};

/// Checks every equality-delete file of `tasks` from its manifest entry: it names
/// equality ids, and each id is a primitive column of the table. Whether the file
/// holds a column of each id is checked where it is read
/// (`delete_reader::load_equality`), so planning reads no delete file.
pub(super) fn check_delete_files(table: &Table, tasks: &[FileScanTask]) -> Result<()> {
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
    }
    Ok(())
}
