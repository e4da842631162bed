//! [`FlussCatalog`]: Fluss databases as DataFusion schemas, tables as union-read
//! tables, plus the virtual tables Fluss's Flink catalog offers (`t$lake`, ...).
//!
//! ```text
//! SELECT * FROM fluss.<database>.<table>         union read (lake snapshot + log tail)
//! SELECT * FROM fluss.<database>."<table>$lake"  lake snapshot only
//! ```
//!
//! Tables DataFusion registers itself (`CREATE EXTERNAL TABLE`, `CREATE VIEW`,
//! `SessionContext::register_table`) live for the catalog's lifetime only, beside the
//! Fluss tables of their database; they never shadow a Fluss table.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use fluss::metadata::TablePath;

use super::blocking::block_on;
use super::changelog::ChangelogTableProvider;
use super::damaged::DamagedTable;
use super::lake_snapshots::lake_snapshots_table;
use super::table::{FlussTableProvider, ReadMode};
use crate::error::{Error, ErrorKind};
use crate::source::FlussSource;
use crate::source::layout::validate_name;
use crate::union::lake_keys::DEFAULT_LAKE_KEY_CACHE_BYTES;
use crate::union::tail_cache::DEFAULT_TAIL_CACHE_BYTES;
use crate::union::{LakeKeyCache, TailCache};

/// Tables registered through DataFusion, by (database, table): not stored in Fluss.
type SessionTables = Arc<RwLock<HashMap<(String, String), Arc<dyn TableProvider>>>>;

/// The last error a listing met (see [`FlussCatalog::take_listing_error`]).
type ListingError = Arc<Mutex<Option<Error>>>;

/// The catalog of one Fluss source (register it as `fluss`): a LocalStore, or any
/// other [`FlussSource`].
///
/// DataFusion's listings (`schema_names`, `table_names`: `SHOW TABLES`,
/// `information_schema`) cannot fail, so an unreachable cluster would look like an
/// empty catalog. The catalog keeps the error a listing met instead;
/// [`FlussCatalog::take_listing_error`] hands it out, and [`crate::sql::FlussSession`]
/// fails the statement with it.
#[derive(Debug, Clone)]
pub struct FlussCatalog {
    source: Arc<dyn FlussSource>,
    session_tables: SessionTables,
    listing_error: ListingError,
    tail_cache: Arc<TailCache>,
    lake_keys: Arc<LakeKeyCache>,
}

impl FlussCatalog {
    /// The catalog of `source`, keeping up to [`DEFAULT_TAIL_CACHE_BYTES`] of folded
    /// primary-key tails and [`DEFAULT_LAKE_KEY_CACHE_BYTES`] of lake files' keys
    /// between queries.
    pub fn new(source: Arc<dyn FlussSource>) -> Self {
        Self {
            source,
            session_tables: Default::default(),
            listing_error: Default::default(),
            tail_cache: Arc::new(TailCache::new(DEFAULT_TAIL_CACHE_BYTES)),
            lake_keys: Arc::new(LakeKeyCache::new(DEFAULT_LAKE_KEY_CACHE_BYTES)),
        }
    }

    /// Registers the catalog in `ctx` as `name`, with [`super::FlussWriteRule`] (once)
    /// so that `INSERT`, `UPDATE`, `DELETE` and `MERGE INTO` write to its tables,
    /// a rule and a `sum` under which integer arithmetic and sums fail on overflow
    /// instead of wrapping (a value written is never a wrapped one), and
    /// [`super::TimeTravelPlanner`] (once) for `VERSION AS OF` and `TIMESTAMP AS OF`,
    /// and the table function [`super::LogBetweenFunction`] over its tables.
    /// Registering the catalog alone with `register_catalog` reads it; its tables
    /// then refuse writes, never writing values other than as given. sqlparser reads
    /// table versions only in dialects that have them: a [`crate::sql::FlussSession`]
    /// parses in one; a plain `SessionContext` needs
    /// `datafusion.sql_parser.dialect` set to one (`databricks`, `bigquery`).
    pub fn register_with(self, ctx: &datafusion::prelude::SessionContext, name: &str) {
        let state = ctx.state();
        let rules = crate::checked::with_checked_arithmetic(&super::with_write_rule(
            &state.analyzer().rules,
        ));
        if rules.len() > state.analyzer().rules.len() {
            let state = datafusion::execution::SessionStateBuilder::new_from_existing(state)
                .with_analyzer_rules(rules)
                .build();
            *ctx.state_ref().write() = state;
        }
        // a relation planner is no `Any`: it is told by its name
        let has_planner = ctx
            .state()
            .relation_planners()
            .iter()
            .any(|p| format!("{p:?}") == format!("{:?}", super::TimeTravelPlanner));
        if !has_planner {
            // registering a relation planner cannot fail
            let _ = ctx.register_relation_planner(Arc::new(super::TimeTravelPlanner));
        }
        ctx.register_udaf(crate::checked::sum().as_ref().clone());
        ctx.register_udtf(
            super::LOG_BETWEEN,
            Arc::new(super::LogBetweenFunction::new(self.clone())),
        );
        ctx.register_catalog(name, Arc::new(self));
    }

    /// Keeps at most `bytes` of lake files' primary-key columns between queries (0:
    /// none): a lake file never changes, so a warm session decodes its keys once
    /// ([`LakeKeyCache`]).
    pub fn with_lake_key_cache_bytes(mut self, bytes: usize) -> Self {
        self.lake_keys = Arc::new(LakeKeyCache::new(bytes));
        self
    }

    /// Keeps at most `bytes` of folded primary-key tails between queries (0: none):
    /// a tail's range never changes, so a warm session decodes and folds it once
    /// ([`TailCache`]).
    pub fn with_tail_cache_bytes(mut self, bytes: usize) -> Self {
        self.tail_cache = Arc::new(TailCache::new(bytes));
        self
    }

    /// The folded tails the catalog's tables keep between queries.
    pub fn tail_cache(&self) -> &Arc<TailCache> {
        &self.tail_cache
    }

    /// The source the catalog reads.
    pub fn source(&self) -> &Arc<dyn FlussSource> {
        &self.source
    }

    /// The error the last failed listing of databases or tables met since the last
    /// call (and forgets it): a listing that failed answered as if empty.
    pub fn take_listing_error(&self) -> Option<Error> {
        self.listing_error.lock().ok()?.take()
    }
}

/// The listing's names, or none after recording why it failed (a database that does
/// not exist simply has no tables).
fn listed(
    listing: Result<crate::Result<Vec<String>>, Error>,
    errors: &ListingError,
) -> Vec<String> {
    match listing.and_then(|r| r) {
        Ok(names) => names,
        Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
        Err(e) => {
            if let Ok(mut slot) = errors.lock() {
                *slot = Some(e);
            }
            Vec::new()
        }
    }
}

/// The Fluss table that `name` in `database` reads (a virtual table `t$lake` reads
/// `t`), with the virtual table's suffix; `None` for a name no Fluss table can have.
pub(crate) fn fluss_table_of<'a>(
    database: &str,
    name: &'a str,
) -> Option<(TablePath, Option<&'a str>)> {
    let (base, suffix) = match name.split_once('$') {
        Some((b, s)) => (b, Some(s)),
        None => (name, None),
    };
    if validate_name("database", database).is_err() || validate_name("table", base).is_err() {
        return None;
    }
    Some((TablePath::new(database, base), suffix))
}

impl CatalogProvider for FlussCatalog {
    fn schema_names(&self) -> Vec<String> {
        let source = self.source.clone();
        listed(
            block_on(async move { source.list_databases().await }),
            &self.listing_error,
        )
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        // No existence check here: it would cost a metadata round trip on every query.
        // Tables of a database that does not exist are simply not found.
        Some(Arc::new(FlussSchema {
            source: self.source.clone(),
            database: name.to_string(),
            session_tables: self.session_tables.clone(),
            listing_error: self.listing_error.clone(),
            tail_cache: self.tail_cache.clone(),
            lake_keys: self.lake_keys.clone(),
        }))
    }
}

/// One Fluss database.
#[derive(Debug, Clone)]
pub struct FlussSchema {
    source: Arc<dyn FlussSource>,
    database: String,
    session_tables: SessionTables,
    listing_error: ListingError,
    tail_cache: Arc<TailCache>,
    lake_keys: Arc<LakeKeyCache>,
}

impl FlussSchema {
    fn session_table(&self, name: &str) -> Option<Arc<dyn TableProvider>> {
        let tables = self.session_tables.read().ok()?;
        tables
            .get(&(self.database.clone(), name.to_string()))
            .cloned()
    }

    fn fluss_table_names(&self) -> Vec<String> {
        let source = self.source.clone();
        let db = self.database.clone();
        listed(
            block_on(async move { source.list_tables(&db).await }),
            &self.listing_error,
        )
    }

    async fn provider(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        // A name Fluss could not have is no Fluss table (DataFusion may still resolve
        // it, e.g. as a file URL).
        let Some((path, suffix)) = fluss_table_of(&self.database, name) else {
            return Ok(None);
        };
        let table = match self.source.get_table(&path).await {
            Ok(t) => t,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            // listed, not hiding the catalog: reading it names the damage
            Err(e) if e.kind() == ErrorKind::DataInvalid && suffix.is_none() => {
                return Ok(Some(Arc::new(DamagedTable::new(path, &e))));
            }
            Err(e) => return Err(e.into()),
        };
        let mode = match suffix {
            None => ReadMode::Union,
            Some("lake") => ReadMode::LakeOnly,
            Some("log") => ReadMode::LogOnly,
            Some("changelog") => {
                let provider = ChangelogTableProvider::new(self.source.clone(), table)?;
                return Ok(Some(Arc::new(provider)));
            }
            Some("binlog") => {
                let provider = ChangelogTableProvider::binlog(self.source.clone(), table)?;
                return Ok(Some(Arc::new(provider)));
            }
            Some("lake$snapshots") => {
                let provider = lake_snapshots_table(self.source.as_ref(), &table).await?;
                return Ok(Some(provider));
            }
            Some(other) if other.starts_with("lake$") => {
                let provider = super::lake_snapshots::lake_system_table(
                    self.source.as_ref(),
                    &table,
                    &other["lake$".len()..],
                )
                .await?;
                return Ok(Some(provider));
            }
            Some(other) => {
                return Err(DataFusionError::Plan(format!(
                    "unknown virtual table '${other}' of {path} (supported: $lake, $log, \
                     $lake$snapshots and the lake's system tables, $changelog, $binlog)"
                )));
            }
        };
        if mode == ReadMode::LakeOnly && table.lake_format().is_none() {
            return Err(DataFusionError::Plan(format!(
                "table {path} has no lake ('table.datalake.enabled' is not true)"
            )));
        }
        let provider = match mode {
            ReadMode::LakeOnly => {
                // the lake's physical system columns: open the lake table (none yet:
                // nothing tiered, and then no system columns to show either)
                let location = self.source.lake_location(&table).await?;
                let system = match crate::lake::open(&location, &table).await? {
                    Some(lake) => lake.system_columns(),
                    None => Vec::new(),
                };
                FlussTableProvider::lake_only(self.source.clone(), table, system)?
                    .with_lake_key_cache(self.lake_keys.clone())
            }
            ReadMode::Union | ReadMode::LogOnly => {
                FlussTableProvider::new(self.source.clone(), table, mode)?
                    .with_tail_cache(self.tail_cache.clone())
                    .with_lake_key_cache(self.lake_keys.clone())
            }
        };
        Ok(Some(Arc::new(provider)))
    }
}

#[async_trait]
impl SchemaProvider for FlussSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.fluss_table_names();
        if let Ok(tables) = self.session_tables.read() {
            names.extend(
                tables
                    .keys()
                    .filter(|(db, _)| *db == self.database)
                    .map(|(_, t)| t.clone()),
            );
        }
        names.sort();
        names
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        if let Some(table) = self.session_table(name) {
            return Ok(Some(table));
        }
        self.provider(name).await
    }

    /// Fluss tables are base tables: known from the listing, without reading their
    /// metadata (`SHOW TABLES` lists a table whose metadata is damaged, too).
    async fn table_type(&self, name: &str) -> DfResult<Option<TableType>> {
        if let Some(table) = self.session_table(name) {
            return Ok(Some(table.table_type()));
        }
        if self.fluss_table_names().iter().any(|t| t == name) {
            return Ok(Some(TableType::Base));
        }
        Ok(self.provider(name).await?.map(|t| t.table_type()))
    }

    fn table_exist(&self, name: &str) -> bool {
        let base = name.split_once('$').map_or(name, |(b, _)| b);
        self.session_table(name).is_some() || self.fluss_table_names().iter().any(|t| t == base)
    }

    /// Keeps a DataFusion-made table (external table, view) for this catalog's
    /// lifetime; it is not written to the Fluss store.
    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let base = name.split_once('$').map_or(name.as_str(), |(b, _)| b);
        if self.fluss_table_names().iter().any(|t| t == base) {
            return Err(DataFusionError::Plan(format!(
                "{}.{name} is a Fluss table; choose another name",
                self.database
            )));
        }
        let mut tables = self
            .session_tables
            .write()
            .map_err(|_| DataFusionError::Internal("session tables lock poisoned".into()))?;
        Ok(tables.insert((self.database.clone(), name), table))
    }

    /// Forgets a DataFusion-made table; Fluss tables are dropped with `DROP TABLE`
    /// through the store, never here.
    fn deregister_table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let mut tables = self
            .session_tables
            .write()
            .map_err(|_| DataFusionError::Internal("session tables lock poisoned".into()))?;
        Ok(tables.remove(&(self.database.clone(), name.to_string())))
    }
}
