//! A [`FlussTable`] as a shipped plan carries it: the table's metadata and every
//! schema version, so a worker decodes the log exactly as the planner would, with no
//! metadata request of its own, and with no credential among its properties.

use std::collections::HashMap;
use std::sync::Arc;

use fluss::metadata::{Schema, TableInfo, TablePath};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::log::{SchemaHistory, SchemaVersion};
use crate::table::{FlussTable, is_sensitive_property};

/// The serialized form of a [`FlussTable`].
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct TableWire {
    path: TablePath,
    table_id: i64,
    schema_id: i32,
    bucket_keys: Vec<String>,
    partition_keys: Vec<String>,
    num_buckets: i32,
    properties: HashMap<String, String>,
    custom_properties: HashMap<String, String>,
    comment: Option<String>,
    created_time: i64,
    modified_time: i64,
    /// Every schema version, oldest first.
    schemas: Vec<(i32, Schema)>,
}

impl TableWire {
    /// The wire form of `table`, its secret properties left out.
    pub(crate) fn of(table: &FlussTable) -> Self {
        let info = &table.info;
        let public = |map: &HashMap<String, String>| {
            map.iter()
                .filter(|(k, _)| !is_sensitive_property(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        Self {
            path: table.path.clone(),
            table_id: info.get_table_id(),
            schema_id: info.get_schema_id(),
            bucket_keys: info.get_bucket_keys().to_vec(),
            partition_keys: info.get_partition_keys().to_vec(),
            num_buckets: info.get_num_buckets(),
            properties: public(info.get_properties()),
            custom_properties: public(info.get_custom_properties()),
            comment: info.get_comment().map(str::to_string),
            created_time: info.get_created_time(),
            modified_time: info.get_modified_time(),
            schemas: table
                .schemas
                .versions()
                .map(|v| (v.id, v.schema.clone()))
                .collect(),
        }
    }

    /// The table again.
    pub(crate) fn into_table(self) -> Result<FlussTable> {
        let mut schemas = SchemaHistory::default();
        let mut latest = None;
        for (id, schema) in self.schemas {
            if id == self.schema_id {
                latest = Some(schema.clone());
            }
            schemas.insert(SchemaVersion::new(id, schema)?);
        }
        let schema = latest.ok_or_else(|| {
            Error::data_invalid("a shipped table lacks its latest schema")
                .with_context("table", self.path.to_string())
                .with_context("schema_id", self.schema_id)
        })?;
        let info = TableInfo::new(
            self.path.clone(),
            self.table_id,
            self.schema_id,
            schema,
            self.bucket_keys,
            self.partition_keys.into(),
            self.num_buckets,
            self.properties,
            self.custom_properties,
            self.comment,
            self.created_time,
            self.modified_time,
        );
        let table = FlussTable {
            path: self.path,
            info,
            schemas: Arc::new(schemas),
        };
        table.validate()?;
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use fluss::metadata::{DataTypes, TableDescriptor};

    use super::*;

    fn schema(columns: &[&str]) -> Schema {
        let mut builder = Schema::builder();
        for c in columns {
            builder = builder.column(*c, DataTypes::bigint());
        }
        builder.build().unwrap()
    }

    #[test]
    fn a_shipped_table_keeps_every_schema_and_no_secret() {
        let latest = schema(&["id", "v"]);
        let descriptor = TableDescriptor::builder()
            .schema(latest.clone())
            .distributed_by(Some(3), vec![])
            .property("table.datalake.enabled", "true")
            .property("table.datalake.paimon.warehouse", "/lake")
            .property("table.datalake.paimon.s3.secret-key", "hush")
            .property("client.security.sasl.password", "hush")
            .build()
            .unwrap();
        let path = TablePath::new("db", "t");
        let info = TableInfo::of(path.clone(), 7, 2, descriptor, 1, 2);
        let mut history = SchemaHistory::default();
        history.insert(SchemaVersion::new(1, schema(&["id"])).unwrap());
        history.insert(SchemaVersion::new(2, latest).unwrap());
        let table = FlussTable {
            path,
            info,
            schemas: Arc::new(history),
        };
        let json = serde_json::to_string(&TableWire::of(&table)).unwrap();
        assert!(!json.contains("hush"), "{json}");
        let shipped: TableWire = serde_json::from_str(&json).unwrap();
        let back = shipped.into_table().unwrap();
        assert_eq!(back.table_id(), 7);
        assert_eq!(back.info.get_schema_id(), 2);
        assert_eq!(back.info.get_num_buckets(), 3);
        assert_eq!(back.schemas.len(), 2);
        assert_eq!(
            back.schemas.get(1).unwrap().schema,
            table.schemas.get(1).unwrap().schema
        );
        let properties = back.info.get_properties();
        assert_eq!(
            properties.get("table.datalake.paimon.warehouse").unwrap(),
            "/lake"
        );
        assert!(!properties.keys().any(|k| is_sensitive_property(k)));
    }
}
