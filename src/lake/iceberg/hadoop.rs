//! The Iceberg "hadoop" catalog on a local warehouse, as far as tiering needs it:
//! create a table (`v1.metadata.json`) and commit a transaction
//! (`v<N+1>.metadata.json`, then `version-hint.text`).
//!
//! The commit point is the creation of `v<N+1>.metadata.json`, which fails if the
//! file exists (Iceberg's `HadoopTableOperations` renames without overwrite for the
//! same reason); readers take the hint and then any later version that exists, so a
//! crash before the hint is updated loses nothing. The `iceberg` crate's own
//! `TableCommit::apply` names the next file `<version>-<uuid>.metadata.json`, so
//! requirements and updates are applied here to keep the hadoop names.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use iceberg::io::FileIO;
use iceberg::spec::{FormatVersion, TableMetadata, TableMetadataBuilder};
use iceberg::table::Table;
use iceberg::{
    Catalog, ErrorKind as IcebergErrorKind, Namespace, NamespaceIdent, TableCommit, TableCreation,
    TableIdent,
};

use super::catalog::{MetadataDir, load_metadata_file, local_dir};
use super::schema::IcebergTableLayout;
use crate::error::{Error, ErrorKind, Result};

/// A hadoop-layout warehouse on the local filesystem.
#[derive(Debug)]
pub struct HadoopCatalog {
    warehouse: PathBuf,
}

fn iceberg_err(message: impl Into<String>) -> iceberg::Error {
    iceberg::Error::new(IcebergErrorKind::Unexpected, message.into())
}

fn unsupported(what: &str) -> iceberg::Error {
    iceberg::Error::new(
        IcebergErrorKind::FeatureUnsupported,
        format!("the LocalStore's hadoop catalog does not {what}"),
    )
}

impl HadoopCatalog {
    /// The catalog of a local warehouse path or `file://` URL.
    pub fn new(warehouse: &str) -> Result<Self> {
        Ok(Self {
            warehouse: local_dir(warehouse)?,
        })
    }

    fn table_dir(&self, ident: &TableIdent) -> PathBuf {
        let mut dir = self.warehouse.clone();
        for part in ident.namespace().iter() {
            dir.push(part);
        }
        dir.join(ident.name())
    }

    /// Creates `ident` with `layout` unless it exists; returns the table either way.
    pub async fn ensure_table(
        &self,
        ident: &TableIdent,
        layout: &IcebergTableLayout,
    ) -> Result<Table> {
        let dir = self.table_dir(ident);
        if current_version(&dir.join("metadata")).await?.is_none() {
            let metadata = TableMetadataBuilder::new(
                layout.schema.clone(),
                layout.spec.clone(),
                layout.sort_order.clone(),
                format!("file://{}", dir.display()),
                FormatVersion::V2,
                layout.properties.clone(),
            )
            .and_then(|b| b.build())
            .map_err(|e| {
                Error::new(ErrorKind::Lake, "cannot create the Iceberg table metadata")
                    .with_source(e)
            })?
            .metadata;
            std::fs::create_dir_all(dir.join("metadata")).map_err(|e| Error::io(&dir, e))?;
            write_version(&dir.join("metadata"), 1, &metadata)?;
        }
        self.load(ident).await
    }

    /// Loads the current version of `ident`.
    pub async fn load(&self, ident: &TableIdent) -> Result<Table> {
        self.load_optional(ident).await?.ok_or_else(|| {
            Error::not_found("the Iceberg table does not exist")
                .with_context("file", self.table_dir(ident).join("metadata").display())
        })
    }

    /// Commits `metadata` as the version after `table`'s (failing if another commit
    /// made that version first); returns the table as committed.
    pub async fn commit_metadata(&self, table: &Table, metadata: TableMetadata) -> Result<Table> {
        let ident = table.identifier();
        let location = table.metadata_location().unwrap_or_default();
        let version = version_of(location).ok_or_else(|| {
            Error::new(ErrorKind::Lake, "not a hadoop metadata file").with_context("file", location)
        })?;
        let metadata_dir = self.table_dir(ident).join("metadata");
        write_version(&metadata_dir, version + 1, &metadata)?;
        load_version(&metadata_dir, ident, version + 1).await
    }

    /// Loads the current version of `ident`; `None` if it does not exist.
    pub async fn load_optional(&self, ident: &TableIdent) -> Result<Option<Table>> {
        let metadata_dir = self.table_dir(ident).join("metadata");
        match current_version(&metadata_dir).await? {
            Some(version) => load_version(&metadata_dir, ident, version).await.map(Some),
            None => Ok(None),
        }
    }
}

async fn load_version(metadata_dir: &Path, ident: &TableIdent, version: u64) -> Result<Table> {
    let file = metadata_dir.join(format!("v{version}.metadata.json"));
    load_metadata_file(&file.to_string_lossy(), ident, FileIO::new_with_fs()).await
}

/// The current metadata version of the local table metadata directory `dir`.
async fn current_version(dir: &Path) -> Result<Option<u64>> {
    MetadataDir::open(&dir.to_string_lossy(), &HashMap::new())?
        .current_version()
        .await
}

/// Writes `v<version>.metadata.json` (failing if it exists: the commit point), then
/// points `version-hint.text` at it.
fn write_version(metadata_dir: &Path, version: u64, metadata: &TableMetadata) -> Result<()> {
    let file = metadata_dir.join(format!("v{version}.metadata.json"));
    let bytes = serde_json::to_vec(metadata)
        .map_err(|e| Error::internal("metadata JSON").with_source(e))?;
    let staged = metadata_dir.join(format!(
        ".v{version}.metadata.json.{}",
        uuid::Uuid::new_v4()
    ));
    write_synced(&staged, &bytes)?;
    // A hard link never replaces an existing file: two committers cannot both win.
    let linked = std::fs::hard_link(&staged, &file);
    let _ = std::fs::remove_file(&staged);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Error::new(
                ErrorKind::Busy,
                "another commit created this Iceberg metadata version first",
            )
            .with_context("file", file.display()));
        }
        Err(e) => return Err(Error::io(&file, e)),
    }
    let hint = metadata_dir.join("version-hint.text");
    let staged_hint = metadata_dir.join(format!(".version-hint.text.{}", uuid::Uuid::new_v4()));
    write_synced(&staged_hint, version.to_string().as_bytes())?;
    std::fs::rename(&staged_hint, &hint).map_err(|e| Error::io(&hint, e))?;
    if let Ok(dir) = std::fs::File::open(metadata_dir) {
        dir.sync_all().map_err(|e| Error::io(metadata_dir, e))?;
    }
    Ok(())
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))?;
    file.sync_all().map_err(|e| Error::io(path, e))
}

/// The version number of a hadoop metadata location (`.../v<N>.metadata.json`).
fn version_of(location: &str) -> Option<u64> {
    location
        .rsplit('/')
        .next()?
        .strip_prefix('v')?
        .strip_suffix(".metadata.json")?
        .parse()
        .ok()
}

#[async_trait]
impl Catalog for HadoopCatalog {
    async fn list_namespaces(
        &self,
        _parent: Option<&NamespaceIdent>,
    ) -> iceberg::Result<Vec<NamespaceIdent>> {
        Err(unsupported("list namespaces"))
    }

    async fn create_namespace(
        &self,
        _namespace: &NamespaceIdent,
        _properties: HashMap<String, String>,
    ) -> iceberg::Result<Namespace> {
        Err(unsupported("create namespaces"))
    }

    async fn get_namespace(&self, _namespace: &NamespaceIdent) -> iceberg::Result<Namespace> {
        Err(unsupported("get namespaces"))
    }

    async fn namespace_exists(&self, _namespace: &NamespaceIdent) -> iceberg::Result<bool> {
        Err(unsupported("check namespaces"))
    }

    async fn update_namespace(
        &self,
        _namespace: &NamespaceIdent,
        _properties: HashMap<String, String>,
    ) -> iceberg::Result<()> {
        Err(unsupported("update namespaces"))
    }

    async fn drop_namespace(&self, _namespace: &NamespaceIdent) -> iceberg::Result<()> {
        Err(unsupported("drop namespaces"))
    }

    async fn list_tables(&self, _namespace: &NamespaceIdent) -> iceberg::Result<Vec<TableIdent>> {
        Err(unsupported("list tables"))
    }

    async fn create_table(
        &self,
        _namespace: &NamespaceIdent,
        _creation: TableCreation,
    ) -> iceberg::Result<Table> {
        Err(unsupported("create tables from a TableCreation"))
    }

    async fn load_table(&self, table: &TableIdent) -> iceberg::Result<Table> {
        self.load(table)
            .await
            .map_err(|e| iceberg_err(e.to_string()))
    }

    async fn drop_table(&self, _table: &TableIdent) -> iceberg::Result<()> {
        Err(unsupported("drop tables"))
    }

    async fn purge_table(&self, _table: &TableIdent) -> iceberg::Result<()> {
        Err(unsupported("purge tables"))
    }

    async fn table_exists(&self, table: &TableIdent) -> iceberg::Result<bool> {
        current_version(&self.table_dir(table).join("metadata"))
            .await
            .map(|v| v.is_some())
            .map_err(|e| iceberg_err(e.to_string()))
    }

    async fn rename_table(&self, _src: &TableIdent, _dest: &TableIdent) -> iceberg::Result<()> {
        Err(unsupported("rename tables"))
    }

    async fn register_table(
        &self,
        _table: &TableIdent,
        _metadata_location: String,
    ) -> iceberg::Result<Table> {
        Err(unsupported("register tables"))
    }

    async fn update_table(&self, mut commit: TableCommit) -> iceberg::Result<Table> {
        let ident = commit.identifier().clone();
        let current = self
            .load(&ident)
            .await
            .map_err(|e| iceberg_err(e.to_string()))?;
        for requirement in commit.take_requirements() {
            requirement.check(Some(current.metadata()))?;
        }
        let location = current
            .metadata_location()
            .ok_or_else(|| iceberg_err("the current table has no metadata location"))?
            .to_string();
        let mut builder = current.metadata().clone().into_builder(Some(location));
        for update in commit.take_updates() {
            builder = update.apply(builder)?;
        }
        let metadata = builder.build()?.metadata;
        self.commit_metadata(&current, metadata)
            .await
            .map_err(|e| iceberg_err(e.to_string()))
    }
}
