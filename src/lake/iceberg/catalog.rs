//! Finding a Fluss table's Iceberg table: the catalog named by
//! `table.datalake.iceberg.type`.
//!
//! `hadoop` is a bare warehouse: `<warehouse>/<db>/<table>/metadata/` holds
//! `v<N>.metadata.json` files and `version-hint.text` naming the current `N`, as
//! Iceberg's `HadoopTableOperations` writes them (the `iceberg` crate has no Hadoop
//! catalog, so the hint is read here and the metadata loaded as a static table).

use std::collections::HashMap;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use iceberg::TableIdent;
use iceberg::io::{FileIO, FileIOBuilder, StorageFactory};
use iceberg::table::Table;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use super::storage::ObjectStorageFactory;
use crate::storage::remote::object_store_at;

use crate::error::{Error, ErrorKind, Result};
use crate::lake::LakeLocation;
use crate::storage::redact;

/// Option (`table.datalake.iceberg.type` without its prefix) naming the catalog type.
pub const CATALOG_TYPE_OPTION: &str = "type";

/// The Iceberg catalog types Fluss tables name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcebergCatalogType {
    /// A bare warehouse with `version-hint.text` (the LocalStore's layout).
    Hadoop,
    /// A JDBC catalog (`uri`), e.g. pyiceberg's sqlite `SqlCatalog`.
    Sql,
    /// A REST catalog.
    Rest,
}

impl IcebergCatalogType {
    /// The type of a lake location (`hadoop` when unset).
    pub fn of(location: &LakeLocation) -> Result<Self> {
        match location
            .options
            .get(CATALOG_TYPE_OPTION)
            .map(|t| t.to_ascii_lowercase())
            .as_deref()
        {
            None | Some("hadoop") => Ok(Self::Hadoop),
            Some("sql") | Some("jdbc") => Ok(Self::Sql),
            Some("rest") => Ok(Self::Rest),
            Some(other) => Err(Error::invalid_input(format!(
                "unknown Iceberg catalog type '{other}' (table.datalake.iceberg.type: hadoop, sql or rest)"
            ))),
        }
    }
}

/// Loads `<database>.<table>` from the location's catalog; `None` if it does not
/// exist yet (nothing was tiered).
pub async fn load_table(
    location: &LakeLocation,
    database: &str,
    table: &str,
) -> Result<Option<Table>> {
    match IcebergCatalogType::of(location)? {
        IcebergCatalogType::Hadoop => load_hadoop(location, database, table).await,
        #[cfg(feature = "iceberg-sql")]
        IcebergCatalogType::Sql => load_sql(location, database, table).await,
        #[cfg(feature = "iceberg-rest")]
        IcebergCatalogType::Rest => load_rest(location, database, table).await,
        #[cfg(not(feature = "iceberg-sql"))]
        IcebergCatalogType::Sql => Err(catalog_compiled_out("sql", "iceberg-sql", database, table)),
        #[cfg(not(feature = "iceberg-rest"))]
        IcebergCatalogType::Rest => Err(catalog_compiled_out(
            "rest",
            "iceberg-rest",
            database,
            table,
        )),
    }
}

/// A catalog type this build was compiled without.
#[cfg(not(all(feature = "iceberg-sql", feature = "iceberg-rest")))]
fn catalog_compiled_out(kind: &str, feature: &str, database: &str, table: &str) -> Error {
    Error::unsupported(format!(
        "an Iceberg {kind} catalog needs fluss-datafusion's `{feature}` feature, which this \
         build was compiled without"
    ))
    .with_context("table", format!("{database}.{table}"))
}

/// Option naming the catalog (`table.datalake.iceberg.name`), as Fluss's
/// `IcebergCatalogProvider` reads it; rows of other catalogs in the same database are
/// not this one's.
#[cfg(any(feature = "iceberg-sql", feature = "iceberg-rest"))]
pub const CATALOG_NAME_OPTION: &str = "name";

/// Fluss's default Iceberg catalog name (`IcebergLakeCatalog.ICEBERG_CATALOG_DEFAULT_NAME`).
#[cfg(any(feature = "iceberg-sql", feature = "iceberg-rest"))]
pub const DEFAULT_CATALOG_NAME: &str = "fluss-iceberg-catalog";

/// Loads a table from a JDBC catalog (`uri`: `sqlite:<path>`, or Java's
/// `jdbc:sqlite:<path>`): the `iceberg_tables` row names the current metadata file.
#[cfg(feature = "iceberg-sql")]
async fn load_sql(location: &LakeLocation, database: &str, table: &str) -> Result<Option<Table>> {
    use iceberg::{Catalog, CatalogBuilder};
    use iceberg_catalog_sql::{
        SQL_CATALOG_PROP_URI, SQL_CATALOG_PROP_WAREHOUSE, SqlCatalogBuilder,
    };
    let uri = location.options.get("uri").ok_or_else(|| {
        Error::invalid_input("an Iceberg sql catalog needs 'table.datalake.iceberg.uri'")
    })?;
    let uri = uri.strip_prefix("jdbc:").unwrap_or(uri);
    if !uri.starts_with("sqlite:") {
        return Err(Error::unsupported(
            "Iceberg sql catalogs on sqlite only for now (uri 'sqlite:<path>')",
        )
        .with_context("uri", redact(uri)));
    }
    let name = location
        .options
        .get(CATALOG_NAME_OPTION)
        .map_or(DEFAULT_CATALOG_NAME, String::as_str);
    let props = std::collections::HashMap::from([
        (SQL_CATALOG_PROP_URI.to_string(), uri.to_string()),
        (
            SQL_CATALOG_PROP_WAREHOUSE.to_string(),
            location.warehouse.clone(),
        ),
    ]);
    let catalog_error = |e: iceberg::Error| {
        Error::new(ErrorKind::Lake, "cannot open the Iceberg sql catalog")
            .with_context("uri", redact(uri))
            .with_source(e)
    };
    let catalog = SqlCatalogBuilder::default()
        .with_storage_factory(storage_factory(location))
        .load(name, props)
        .await
        .map_err(catalog_error)?;
    let ident = TableIdent::from_strs([database, table])
        .map_err(|e| Error::invalid_input("bad Iceberg table name").with_source(e))?;
    if !catalog.table_exists(&ident).await.map_err(catalog_error)? {
        return Ok(None);
    }
    catalog.load_table(&ident).await.map(Some).map_err(|e| {
        Error::new(
            ErrorKind::Lake,
            "cannot load the Iceberg table from the sql catalog",
        )
        .with_context("uri", redact(uri))
        .with_source(e)
    })
}

/// Options of the location that configure the catalog itself, not the REST client.
#[cfg(feature = "iceberg-rest")]
const NOT_REST_PROPERTIES: [&str; 4] =
    [CATALOG_TYPE_OPTION, CATALOG_NAME_OPTION, "uri", "warehouse"];

/// Loads a table from a REST catalog (`uri`; `token`, or `credential` =
/// `<client id>:<secret>` for the OAuth2 client-credentials exchange, `scope`,
/// `oauth2-server-uri`, `header.*`, as Iceberg's `RESTCatalog` takes them); the
/// warehouse is passed along. Credentials travel in request headers only: errors
/// name the uri, and the client redacts headers in its own errors.
#[cfg(feature = "iceberg-rest")]
async fn load_rest(location: &LakeLocation, database: &str, table: &str) -> Result<Option<Table>> {
    use iceberg::{Catalog, CatalogBuilder};
    use iceberg_catalog_rest::{
        REST_CATALOG_PROP_URI, REST_CATALOG_PROP_WAREHOUSE, RestCatalogBuilder,
    };
    let uri = location.options.get("uri").ok_or_else(|| {
        Error::invalid_input("an Iceberg rest catalog needs 'table.datalake.iceberg.uri'")
    })?;
    let name = location
        .options
        .get(CATALOG_NAME_OPTION)
        .map_or(DEFAULT_CATALOG_NAME, String::as_str);
    let mut props: std::collections::HashMap<String, String> = location
        .options
        .iter()
        .filter(|(k, _)| !NOT_REST_PROPERTIES.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    props.insert(REST_CATALOG_PROP_URI.to_string(), uri.clone());
    if !location.warehouse.is_empty() {
        props.insert(
            REST_CATALOG_PROP_WAREHOUSE.to_string(),
            location.warehouse.clone(),
        );
    }
    let catalog_error = |message: &'static str| {
        let uri = redact(uri);
        move |e: iceberg::Error| {
            Error::new(ErrorKind::Lake, message)
                .with_context("uri", &uri)
                .with_source(e)
        }
    };
    let catalog = RestCatalogBuilder::default()
        .with_storage_factory(storage_factory(location))
        .load(name, props)
        .await
        .map_err(catalog_error("cannot open the Iceberg rest catalog"))?;
    let ident = TableIdent::from_strs([database, table])
        .map_err(|e| Error::invalid_input("bad Iceberg table name").with_source(e))?;
    match catalog.load_table(&ident).await {
        Ok(table) => Ok(Some(table)),
        Err(e) if e.kind() == iceberg::ErrorKind::TableNotFound => Ok(None),
        Err(e) => Err(catalog_error(
            "cannot load the Iceberg table from the rest catalog",
        )(e)),
    }
}

/// The local directory of a warehouse path or `file://` URL (the LocalStore's
/// tiering writes local warehouses only).
pub(super) fn local_dir(warehouse: &str) -> Result<PathBuf> {
    let path = warehouse
        .strip_prefix("file://")
        .or_else(|| warehouse.strip_prefix("file:"))
        .unwrap_or(warehouse);
    if !path.starts_with('/') {
        return Err(Error::unsupported(
            "tiering to an Iceberg warehouse on object storage is not supported (reading is)",
        )
        .with_context("warehouse", redact(warehouse)));
    }
    Ok(PathBuf::from(path))
}

/// The file IO of Iceberg tables at `location`: local files and object stores,
/// configured by the location's storage options.
pub(super) fn file_io(location: &LakeLocation) -> FileIO {
    FileIOBuilder::new(storage_factory(location)).build()
}

/// The storage factory handed to Iceberg catalogs for `location`.
pub(super) fn storage_factory(location: &LakeLocation) -> Arc<dyn StorageFactory> {
    Arc::new(ObjectStorageFactory::new(location.options.clone()))
}

async fn load_hadoop(
    location: &LakeLocation,
    database: &str,
    table: &str,
) -> Result<Option<Table>> {
    let ident = TableIdent::from_strs([database, table])
        .map_err(|e| Error::invalid_input("bad Iceberg table name").with_source(e))?;
    let table_dir = format!(
        "{}/{database}/{table}",
        location.warehouse.trim_end_matches('/')
    );
    let metadata = MetadataDir::open(&format!("{table_dir}/metadata"), &location.options)?;
    match metadata.current_version().await? {
        None => Ok(None),
        Some(version) => {
            load_metadata_file(&metadata.version_file(version), &ident, file_io(location))
                .await
                .map(Some)
        }
    }
}

/// Loads the Iceberg table whose metadata is the file at `location`.
pub(super) async fn load_metadata_file(
    location: &str,
    ident: &TableIdent,
    file_io: FileIO,
) -> Result<Table> {
    let table =
        iceberg::table::StaticTable::from_metadata_file(location, ident.clone(), file_io.clone())
            .await
            .map_err(|e| {
                Error::new(ErrorKind::Lake, "cannot read the Iceberg table metadata")
                    .with_context("file", redact(location))
                    .with_source(e)
            })?;
    // Writable: a static table is read-only, but the transaction only needs its
    // metadata, FileIO and identifier.
    Table::builder()
        .metadata(table.metadata())
        .metadata_location(location.to_string())
        .identifier(ident.clone())
        .file_io(file_io)
        .runtime(iceberg::Runtime::try_current().map_err(|e| {
            Error::new(ErrorKind::Lake, "no async runtime for the Iceberg table").with_source(e)
        })?)
        .build()
        .map_err(|e| {
            Error::new(ErrorKind::Lake, "cannot open the Iceberg table")
                .with_context("file", redact(location))
                .with_source(e)
        })
}

/// The `metadata/` directory of a hadoop table, local or on an object store.
pub(super) struct MetadataDir {
    store: Arc<dyn ObjectStore>,
    path: ObjectPath,
    location: String,
}

impl MetadataDir {
    /// The directory at `location` (a path or URL), reached with `options`.
    pub(super) fn open(location: &str, options: &HashMap<String, String>) -> Result<Self> {
        let location = location.trim_end_matches('/').to_string();
        let (store, path) = object_store_at(&location, options)?;
        Ok(Self {
            store,
            path,
            location,
        })
    }

    /// The location of `v<version>.metadata.json`.
    pub(super) fn version_file(&self, version: u64) -> String {
        format!("{}/v{version}.metadata.json", self.location)
    }

    async fn exists(&self, name: &str) -> Result<bool> {
        match self.store.head(&self.path.clone().join(name)).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => {
                Err(Error::from(e)
                    .with_context("file", redact(&format!("{}/{name}", self.location))))
            }
        }
    }

    /// The current metadata version: `version-hint.text` and any later version that
    /// exists (as Iceberg's `HadoopTableOperations.refresh` moves past the hint), or
    /// the highest `v<N>.metadata.json` when the hint is missing (as its
    /// `findVersion` falls back); `None` if there is no table.
    pub(super) async fn current_version(&self) -> Result<Option<u64>> {
        let hint_location = redact(&format!("{}/version-hint.text", self.location));
        match self
            .store
            .get(&self.path.clone().join("version-hint.text"))
            .await
        {
            Ok(got) => {
                let text = got
                    .bytes()
                    .await
                    .map_err(|e| Error::from(e).with_context("file", &hint_location))?;
                let mut version: u64 = std::str::from_utf8(&text)
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
                    .ok_or_else(|| {
                        Error::data_invalid("version-hint.text does not hold a version number")
                            .with_context("file", &hint_location)
                    })?;
                // A commit that crashed before updating the hint is still committed.
                while self
                    .exists(&format!("v{}.metadata.json", version + 1))
                    .await?
                {
                    version += 1;
                }
                return Ok(Some(version));
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(Error::from(e).with_context("file", hint_location)),
        }
        let listing = match self.store.list_with_delimiter(Some(&self.path)).await {
            Ok(listing) => listing,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(Error::from(e).with_context("file", redact(&self.location))),
        };
        Ok(listing
            .objects
            .iter()
            .filter_map(|o| {
                o.location
                    .filename()?
                    .strip_prefix('v')?
                    .strip_suffix(".metadata.json")?
                    .parse::<u64>()
                    .ok()
            })
            .max())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn current_version(dir: &Path) -> Result<Option<u64>> {
        MetadataDir::open(dir.to_str().unwrap(), &HashMap::new())?
            .current_version()
            .await
    }

    #[tokio::test]
    async fn the_hint_names_the_version_and_its_absence_falls_back_to_the_highest() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            current_version(&dir.path().join("missing")).await.unwrap(),
            None
        );
        for v in [1, 2, 10] {
            std::fs::write(dir.path().join(format!("v{v}.metadata.json")), "{}").unwrap();
        }
        assert_eq!(current_version(dir.path()).await.unwrap(), Some(10));
        std::fs::write(dir.path().join("version-hint.text"), "1\n").unwrap();
        // v2 exists: a commit that crashed before writing the hint
        assert_eq!(current_version(dir.path()).await.unwrap(), Some(2));
        std::fs::write(dir.path().join("version-hint.text"), "x").unwrap();
        let e = current_version(dir.path()).await.unwrap_err().to_string();
        assert!(e.contains("version-hint.text"), "{e}");
    }
}
