//! SQL over a Fluss source: [`FlussSession`](crate::sql::FlussSession) wraps a DataFusion `SessionContext` with
//! the [`FlussCatalog`] registered as catalog `fluss` and its write rule, and runs Fluss DDL
//! and `CALL` through the source's [`FlussWriter`](crate::source::FlussWriter) (a LocalStore
//! takes writes; a read-only source refuses them clearly). Everything else, writes
//! included, is DataFusion's. The `fluss-sql` shell and embedding applications share it.
//!
//! ```text
//!  sql ──> statement::parse_statement ─┬─ CREATE/DROP DATABASE|TABLE ─> ddl ─> FlussWriter
//!                                      ├─ CALL tier ─> dml ─> FlussWriter
//!                                      ├─ USE db / SHOW DATABASES / SHOW CREATE TABLE / DESCRIBE
//!                                      └─ anything else (SELECT, INSERT, UPDATE, DELETE, MERGE,
//!                                         EXPLAIN, COPY, SET) ─> DataFusion (+ FlussWriteRule)
//! ```
//!
//! ```no_run
//! # async fn demo() -> fluss_datafusion::Result<()> {
//! use std::sync::Arc;
//! use fluss_datafusion::source::LocalStore;
//! use fluss_datafusion::sql::FlussSession;
//!
//! let store = Arc::new(LocalStore::open("./fluss-data").await?);
//! let session = FlussSession::new(store).await?;
//! session.execute("CREATE TABLE t (id BIGINT, PRIMARY KEY (id) NOT ENFORCED)").await?;
//! session.execute("INSERT INTO t VALUES (1), (2)").await?;
//! let batches = session.execute("SELECT count(*) FROM t").await?;
//! # Ok(()) }
//! ```

pub(crate) mod ddl;
mod describe;
mod dialect;
mod dml;
mod error;
mod explicit_casts;
pub(crate) mod parse;
mod partitions;
mod show_create;
pub(crate) mod statement;
mod suggest;
mod update_from;

pub use describe::{describe_table, list_tables};
pub use error::one_line;
pub use parse::{is_complete, parse_object_name, split_statements};

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use fluss::metadata::TablePath;

use self::error::from_datafusion;
use self::statement::{Statement, parse_statement};
use crate::error::{Error, Result};
use crate::provider::{
    CooperativeJoinsRule, FlussCatalog, FlussOptions, LOG_BETWEEN, LogBetweenFunction,
    LookupJoinRule, TimeTravelPlanner, fluss_table_of, with_write_rule,
};
use crate::source::prefetch::{with_tables_confirmed, with_tables_prefetched};
use crate::source::{FlussSource, FlussTable, FlussWriter};
use crate::storage::registry::SessionObjectStores;
use datafusion::optimizer::Analyzer;

/// The catalog name the session registers the store under.
pub const CATALOG: &str = "fluss";

/// Deepest expression nesting a statement may have (its expression depth, estimated
/// from its tokens).
///
/// DataFusion plans a chain of n operators in O(n²): its type-coercion pass asks each
/// operator's input types (`TypeCoercionRewriter::coerce_binary_op`,
/// datafusion-optimizer 55.2 `analyzer/type_coercion.rs`), and `Expr::get_type` of an
/// operator recomputes its whole subtree, evaluating the arithmetic kernel on empty
/// arrays at every level (`BinaryTypeCoercer::get_result`, datafusion-expr-common
/// `type_coercion/binary.rs`); the plan's column names are rendered level by level
/// too. At this bound a sum of literals plans in about 3 s (2,000 terms: 2.95 s,
/// 1,000: 0.80 s, 500: 0.28 s, release build on 2 cores); beyond it a statement is
/// refused at once instead of running for minutes.
pub const MAX_EXPRESSION_DEPTH: usize = 2_000;

/// Statements up to this depth are planned on the caller's stack.
const SHALLOW_EXPRESSION_DEPTH: usize = 256;

/// Stack of the thread deep statements run on (reserved, touched only as used).
const DEEP_STATEMENT_STACK: usize = 256 << 20;

/// The database used when none is named (created on first use).
pub const DEFAULT_DATABASE: &str = "fluss";

/// How to build a [`FlussSession`].
#[derive(Clone)]
pub struct SessionOptions {
    /// The current database at start.
    pub default_database: String,
    /// Create `default_database` when it is missing (through the source's writer; a
    /// read-only source then fails). Without it nothing is created or checked: a
    /// missing database leaves unqualified names unresolved, qualified ones work.
    pub create_database: bool,
    /// DataFusion `target_partitions` (default: number of cores).
    pub target_partitions: Option<usize>,
    /// Memory pool limit in bytes (default: unbounded).
    pub memory_limit: Option<usize>,
    /// Options of the object stores DataFusion reads and writes at URLs
    /// (`s3.endpoint`, `s3.access-key-id`, ... as the lakes take them; the
    /// environment fills in the rest). They may hold credentials: never shown.
    pub object_store_options: HashMap<String, String>,
    /// Changes the session's DataFusion state before it is built, after the
    /// library's own configuration: e.g. to plan queries distributed (the
    /// `fluss-distributed` crate's coordinator).
    pub state_hook: Option<StateHook>,
    /// Renders the physical plan a plain `EXPLAIN` shows, planned through the
    /// session's query planner (DataFusion's own EXPLAIN bypasses it): e.g. a
    /// distributed plan with its stages and tasks. `None`: DataFusion's EXPLAIN.
    pub explain_renderer: Option<ExplainRenderer>,
}

/// Renders a physical plan for `EXPLAIN` ([`SessionOptions::explain_renderer`]).
pub type ExplainRenderer =
    Arc<dyn Fn(&dyn datafusion::physical_plan::ExecutionPlan) -> String + Send + Sync>;

/// A change to a session's DataFusion state as it is built ([`SessionOptions::state_hook`]).
pub type StateHook = Arc<dyn Fn(SessionStateBuilder) -> SessionStateBuilder + Send + Sync>;

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut keys: Vec<&String> = self.object_store_options.keys().collect();
        keys.sort();
        f.debug_struct("SessionOptions")
            .field("default_database", &self.default_database)
            .field("create_database", &self.create_database)
            .field("target_partitions", &self.target_partitions)
            .field("memory_limit", &self.memory_limit)
            .field("object_store_option_keys", &keys)
            .field("state_hook", &self.state_hook.is_some())
            .field("explain_renderer", &self.explain_renderer.is_some())
            .finish()
    }
}

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            default_database: DEFAULT_DATABASE.to_string(),
            create_database: true,
            target_partitions: None,
            memory_limit: None,
            object_store_options: HashMap::new(),
            state_hook: None,
            explain_renderer: None,
        }
    }
}

/// What one statement produced.
#[derive(Debug, Clone)]
pub struct StatementResult {
    /// The result schema (no fields for statements without rows, e.g. DDL).
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
    /// Something the user should know about what the statement did (a shell prints
    /// it apart from the rows).
    pub notice: Option<String>,
}

impl StatementResult {
    /// A result without rows (DDL, `USE`, `SET`).
    pub fn empty() -> Self {
        Self {
            schema: Arc::new(Schema::empty()),
            batches: Vec::new(),
            notice: None,
        }
    }

    /// A result of one batch.
    pub fn of(batch: RecordBatch) -> Self {
        Self {
            schema: batch.schema(),
            batches: vec![batch],
            notice: None,
        }
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// Whether the statement returns rows at all (as opposed to DDL).
    pub fn has_columns(&self) -> bool {
        !self.schema.fields().is_empty()
    }
}

/// What one statement produced, a query's rows still to be read
/// ([`FlussSession::execute_statement_stream`]).
pub enum StatementOutput {
    /// A query's rows, produced as the stream is polled: dropping it stops the query.
    Rows {
        /// The rows.
        stream: datafusion::execution::SendableRecordBatchStream,
        /// Something the user should know about the query (a shell prints it apart
        /// from the rows).
        notice: Option<String>,
    },
    /// A statement that ran to its end, with its rows if it has any.
    Done(StatementResult),
}

impl StatementOutput {
    /// The output with `notice`, when there is one, as its notice.
    fn with_notice(mut self, notice: Option<String>) -> Self {
        if let Some(notice) = notice {
            match &mut self {
                Self::Rows { notice: kept, .. } => *kept = Some(notice),
                Self::Done(result) => result.notice = Some(notice),
            }
        }
        self
    }
}

impl std::fmt::Debug for StatementOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Rows { stream, notice } => f
                .debug_struct("Rows")
                .field("schema", &stream.schema())
                .field("notice", notice)
                .finish(),
            Self::Done(result) => f.debug_tuple("Done").field(result).finish(),
        }
    }
}

/// How a statement's rows are handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Delivery {
    /// Collected: every row in memory when the statement returns.
    Collect,
    /// As a stream a query produces as it is read.
    Stream,
}

/// A SQL session over a LocalStore.
#[derive(Clone)]
pub struct FlussSession {
    ctx: SessionContext,
    source: Arc<dyn FlussSource>,
    /// The catalog registered as `fluss` (its listing errors fail statements).
    catalog: FlussCatalog,
    /// How a plain `EXPLAIN` shows physical plans, when not as DataFusion does.
    explain_renderer: Option<ExplainRenderer>,
}

impl std::fmt::Debug for FlussSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FlussSession")
            .field("source", &self.source.name())
            .field("database", &self.current_database())
            .finish()
    }
}

impl FlussSession {
    /// A session with default options (database `fluss`, created if missing).
    pub async fn new(source: Arc<dyn FlussSource>) -> Result<Self> {
        Self::with_options(source, SessionOptions::default()).await
    }

    /// A session with explicit options.
    pub async fn with_options(
        source: Arc<dyn FlussSource>,
        options: SessionOptions,
    ) -> Result<Self> {
        // created only when missing (and the source takes writes): a cluster's
        // default database exists, and asking it to create one is DDL
        if options.create_database
            && !source
                .list_databases()
                .await?
                .contains(&options.default_database)
        {
            match source.writer() {
                Some(writer) => {
                    writer
                        .create_database(&options.default_database, None, true)
                        .await?
                }
                None => {
                    return Err(Error::not_found(format!(
                        "database '{}' does not exist in {}",
                        options.default_database,
                        source.name()
                    )));
                }
            }
        }
        let mut config = SessionConfig::new()
            .with_information_schema(true)
            .with_create_default_catalog_and_schema(false)
            .with_default_catalog_and_schema(CATALOG, &options.default_database)
            .with_option_extension(FlussOptions::default());
        if let Some(n) = options.target_partitions {
            if n == 0 {
                return Err(Error::invalid_input("target partitions must be positive"));
            }
            config = config.with_target_partitions(n);
        }
        // `1.005` is the decimal 1.005, as in Flink and Fluss, not the nearest double:
        // a literal written into a DECIMAL column keeps every digit.
        config.options_mut().sql_parser.parse_float_as_decimal = true;
        let mut runtime = RuntimeEnvBuilder::new().with_object_store_registry(Arc::new(
            SessionObjectStores::new(options.object_store_options.clone()),
        ));
        if let Some(limit) = options.memory_limit {
            runtime = runtime.with_memory_limit(limit, 1.0);
        }
        let runtime = runtime.build_arc().map_err(from_datafusion)?;
        // `SELECT * FROM 'file.parquet'` reads files directly (backfill checks).
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(runtime)
            .with_default_features()
            .with_physical_optimizer_rule(Arc::new(LookupJoinRule))
            // after the lookup rule, which looks for bare hash joins
            .with_physical_optimizer_rule(Arc::new(CooperativeJoinsRule))
            .with_analyzer_rules(crate::checked::with_checked_arithmetic(&with_write_rule(
                &Analyzer::new().rules,
            )))
            .with_relation_planners(vec![Arc::new(TimeTravelPlanner)]);
        let state = match &options.state_hook {
            Some(hook) => hook(state),
            None => state,
        }
        .build();
        let ctx = SessionContext::new_with_state(state).enable_url_table();
        // integer and decimal sums fail on overflow (`crate::checked`)
        ctx.register_udaf(crate::checked::sum().as_ref().clone());
        let catalog = FlussCatalog::new(source.clone());
        ctx.register_catalog(CATALOG, Arc::new(catalog.clone()));
        ctx.register_udtf(
            LOG_BETWEEN,
            Arc::new(LogBetweenFunction::new(catalog.clone())),
        );
        Ok(Self {
            ctx,
            source,
            catalog,
            explain_renderer: options.explain_renderer.clone(),
        })
    }

    /// The DataFusion context (register more tables or catalogs here).
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// The source the session reads.
    pub fn source(&self) -> &Arc<dyn FlussSource> {
        &self.source
    }

    /// The source's writer, or an error naming what needs one.
    pub fn writer(&self, what: &str) -> Result<&dyn FlussWriter> {
        crate::source::writer::writer_of(self.source.as_ref(), what)
    }

    /// The current database.
    pub fn current_database(&self) -> String {
        self.ctx
            .state()
            .config()
            .options()
            .catalog
            .default_schema
            .clone()
    }

    /// Runs every statement of `sql` (separated by `;`) and returns the rows of the last.
    pub async fn execute(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        let mut last = Vec::new();
        for statement in parse::split_statements(sql)? {
            last = self.execute_statement(&statement).await?.batches;
        }
        Ok(last)
    }

    /// Runs one statement.
    ///
    /// Query planning recurses over expression trees, so a deeply nested statement
    /// could overflow the caller's stack and abort the process. One deeper than
    /// [`MAX_EXPRESSION_DEPTH`] is refused; one deeper than a few hundred levels runs
    /// on a thread of its own with a large stack (and its own single-threaded
    /// runtime); everything else runs in place.
    pub async fn execute_statement(&self, sql: &str) -> Result<StatementResult> {
        if checked_depth(sql)? <= SHALLOW_EXPRESSION_DEPTH {
            return self.run_statement(sql).await;
        }
        self.run_deep_statement(sql).await
    }

    /// Runs one statement as [`FlussSession::execute_statement`] does, but hands a
    /// query's rows over as a stream instead of collecting them: a reader that shows
    /// rows as they come (the shell) holds one batch at a time, and dropping the
    /// stream stops the query. Everything else (DDL, writes, `SET`, `USE`, `SHOW
    /// DATABASES`, an `EXPLAIN` the session renders itself) runs to its end and comes
    /// back [`StatementOutput::Done`], as does a statement nested deep enough to be
    /// planned on a thread of its own (its rows are collected there).
    pub async fn execute_statement_stream(&self, sql: &str) -> Result<StatementOutput> {
        if checked_depth(sql)? > SHALLOW_EXPRESSION_DEPTH {
            return self
                .run_deep_statement(sql)
                .await
                .map(StatementOutput::Done);
        }
        match parse_statement(sql)? {
            Statement::Query(query) => Ok(self
                .query_output(&query, Delivery::Stream)
                .await?
                .with_notice(query_notice(&query))),
            _ => self.run_statement(sql).await.map(StatementOutput::Done),
        }
    }

    /// Runs a statement nested too deep for the caller's stack on a thread of its
    /// own with a large stack and its own single-threaded runtime.
    async fn run_deep_statement(&self, sql: &str) -> Result<StatementResult> {
        let (done, result) = tokio::sync::oneshot::channel();
        let (session, sql) = (self.clone(), sql.to_string());
        std::thread::Builder::new()
            .name("fluss-deep-statement".into())
            .stack_size(DEEP_STATEMENT_STACK)
            .spawn(move || {
                let outcome = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Error::internal("cannot start a runtime").with_source(e))
                    .and_then(|runtime| runtime.block_on(session.run_statement(&sql)));
                let _ = done.send(outcome);
            })
            .map_err(|e| Error::internal("cannot start a statement thread").with_source(e))?;
        result
            .await
            .map_err(|_| Error::internal("the statement thread stopped without an answer"))?
    }

    async fn run_statement(&self, sql: &str) -> Result<StatementResult> {
        match parse_statement(sql)? {
            Statement::CreateDatabase(spec) => {
                self.writer("CREATE DATABASE")?
                    .create_database(&spec.name, spec.comment.as_deref(), spec.if_not_exists)
                    .await?;
                Ok(StatementResult::empty())
            }
            Statement::CreateTable(mut spec) => {
                if let Some(query) = spec.as_query.take() {
                    return self.create_table_as(spec, &query).await;
                }
                if let Some(source) = spec.like.clone() {
                    let source = self.source.get_table(&self.table_path(&source)?).await?;
                    spec = ddl::like(spec, &source)?;
                }
                let path = self.table_path(&spec.name)?;
                let descriptor = ddl::descriptor(&spec)?;
                self.writer("CREATE TABLE")?
                    .create_table(&path, &descriptor, spec.if_not_exists)
                    .await?;
                Ok(StatementResult::empty())
            }
            Statement::DropTable { names, if_exists } => {
                for name in names {
                    let path = self.table_path(&name)?;
                    // A session table (CREATE EXTERNAL TABLE / VIEW) goes first: it is
                    // never a Fluss table of the same name.
                    let reference = datafusion::common::TableReference::full(
                        CATALOG,
                        path.database(),
                        path.table(),
                    );
                    if self
                        .ctx
                        .deregister_table(reference)
                        .map_err(from_datafusion)?
                        .is_some()
                    {
                        continue;
                    }
                    self.writer("DROP TABLE")?
                        .drop_table(&path, if_exists)
                        .await?;
                }
                Ok(StatementResult::empty())
            }
            Statement::DropDatabase {
                name,
                if_exists,
                cascade,
            } => {
                let db = database_name(&name)?;
                if db == self.current_database() {
                    return Err(Error::invalid_input(format!(
                        "cannot drop the current database '{db}'; USE another one first"
                    )));
                }
                self.writer("DROP DATABASE")?
                    .drop_database(&db, if_exists, cascade)
                    .await?;
                Ok(StatementResult::empty())
            }
            Statement::AlterTable { name, set, reset } => {
                let path = self.table_path(&name)?;
                self.writer("ALTER TABLE")?
                    .alter_table_options(&path, &set, &reset)
                    .await?;
                Ok(StatementResult::empty())
            }
            Statement::AddColumns { name, columns } => {
                let path = self.table_path(&name)?;
                self.writer("ALTER TABLE")?
                    .add_columns(&path, &columns)
                    .await?;
                Ok(StatementResult::empty())
            }
            Statement::AlterPartition {
                name,
                spec,
                add,
                if_clause,
            } => {
                let path = self.table_path(&name)?;
                let writer = self.writer("ALTER TABLE")?;
                if add {
                    writer.create_partition(&path, &spec, if_clause).await?;
                } else {
                    writer.drop_partition(&path, &spec, if_clause).await?;
                }
                Ok(StatementResult::empty())
            }
            Statement::ShowPartitions { name, spec } => {
                partitions::show_partitions(self, &name, &spec).await
            }
            Statement::Call { procedure, args } => dml::call(self, &procedure, &args)
                .await
                .map(StatementResult::of),
            Statement::Use { database } => {
                let db = database_name(&database)?;
                let databases = self.source.list_databases().await?;
                if !databases.contains(&db) {
                    let hint = suggest::closest(&db, databases.iter().map(String::as_str))
                        .map(|best| format!("; did you mean '{best}'?"))
                        .unwrap_or_default();
                    return Err(Error::not_found(format!(
                        "database '{db}' does not exist{hint}"
                    )));
                }
                let state = self.ctx.state_ref();
                let mut state = state.write();
                state.config_mut().options_mut().catalog.default_schema = db;
                Ok(StatementResult::empty())
            }
            Statement::ShowDatabases => {
                let names = self.source.list_databases().await?;
                let schema = Arc::new(Schema::new(vec![Field::new(
                    "database",
                    DataType::Utf8,
                    false,
                )]));
                let batch = RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(names))])?;
                Ok(StatementResult::of(batch))
            }
            Statement::Query(sql) => {
                let mut result = self.query(&sql).await?;
                result.notice = query_notice(&sql);
                Ok(result)
            }
            Statement::ShowCreateTable { name, sql } => {
                match self.fluss_table_named(&name).await? {
                    Some(table) => Ok(StatementResult::of(show_create::show_create_table(&table)?)),
                    None => self.query(&sql).await,
                }
            }
            Statement::Describe { name, sql } => match self.fluss_table_named(&name).await? {
                Some(table) => Ok(StatementResult::of(show_create::describe_columns(&table)?)),
                None => self.query(&sql).await,
            },
            Statement::ShowCatalogs => {
                let mut names = self.ctx.catalog_names();
                names.sort();
                let schema = Arc::new(Schema::new(vec![Field::new(
                    "catalog",
                    DataType::Utf8,
                    false,
                )]));
                let batch = RecordBatch::try_new(schema, vec![Arc::new(StringArray::from(names))])?;
                Ok(StatementResult::of(batch))
            }
            Statement::UseCatalog { catalog } => {
                let names = self.ctx.catalog_names();
                if catalog != CATALOG && names.contains(&catalog) {
                    return Err(Error::unsupported(format!(
                        "the session's catalog is '{CATALOG}'; name '{catalog}' tables as \
                         {catalog}.db.t"
                    )));
                }
                if catalog != CATALOG {
                    return Err(Error::not_found(format!(
                        "catalog '{catalog}' does not exist (catalogs: {})",
                        names.join(", ")
                    )));
                }
                Ok(StatementResult::empty())
            }
            Statement::ShowTablesOf { database } => {
                let db = database_name(&database)?;
                if !self.source.list_databases().await?.contains(&db) {
                    return Err(Error::not_found(format!("database '{db}' does not exist")));
                }
                let sql = format!(
                    "SELECT table_catalog, table_schema, table_name, table_type \
                     FROM information_schema.tables WHERE table_catalog = '{CATALOG}' \
                     AND table_schema = '{}' ORDER BY table_name",
                    db.replace('\'', "''")
                );
                self.query(&sql).await
            }
            Statement::QuotedSet { key, value } => flink_setting(self, &key, &value).await,
        }
    }

    /// The session's state with the Fluss client options `sql`'s hints set, for that
    /// statement alone, and whether any did.
    fn hinted_state(&self, sql: &str) -> Result<(datafusion::execution::SessionState, bool)> {
        let mut state = self.ctx.state();
        let mut hinted = false;
        for hint in parse::hints(sql) {
            for (key, value) in applied_hint_options(&hint) {
                hinted = true;
                state
                    .config_mut()
                    .options_mut()
                    .set(key, &value)
                    .map_err(from_datafusion)?;
            }
        }
        Ok((state, hinted))
    }

    /// Plans a query (`SELECT`, `WITH`, `VALUES`, `EXPLAIN`) as
    /// [`FlussSession::query`] does, hints included, and returns its rows as a stream
    /// instead of collecting them: for readers that consume rows as they come (the
    /// Python package's `RecordBatchReader`). Statements that change something run
    /// through [`FlussSession::execute`].
    pub async fn query_stream(
        &self,
        sql: &str,
    ) -> Result<datafusion::execution::SendableRecordBatchStream> {
        let (state, _) = self.hinted_state(sql)?;
        let statement = dialect::parse_statement(&state, sql).map_err(from_datafusion)?;
        if !statement::reads_only(&statement) {
            return Err(Error::invalid_input(
                "only a query streams its rows; run statements that change something with execute",
            ));
        }
        match self.query_output(sql, Delivery::Stream).await? {
            StatementOutput::Rows { stream, .. } => Ok(stream),
            StatementOutput::Done(result) => {
                let rows = datafusion::physical_plan::memory::MemoryStream::try_new(
                    result.batches,
                    result.schema,
                    None,
                )
                .map_err(from_datafusion)?;
                Ok(Box::pin(rows))
            }
        }
    }

    /// Why a statement over `tables` failed with `e`: `SELECT c FROM t` with t
    /// damaged fails planning ("no field c"), so a damaged table is named first; a
    /// mistyped table or database name gets the closest existing one.
    async fn failure_among(&self, tables: &[TablePath], e: Error) -> Error {
        if let Some(damage) = self.damage_among(tables).await {
            return damage;
        }
        self.missing_among(tables).await.unwrap_or(e)
    }

    /// Runs a statement through DataFusion only. A catalog listing it made that
    /// failed (`SHOW TABLES`, `information_schema` on an unreachable cluster) fails
    /// it, instead of answering as if the catalog were empty.
    pub async fn query(&self, sql: &str) -> Result<StatementResult> {
        match self.query_output(sql, Delivery::Collect).await? {
            StatementOutput::Done(result) => Ok(result),
            StatementOutput::Rows { .. } => Err(Error::internal(
                "a statement asked to be collected came back as a stream",
            )),
        }
    }

    /// Plans and runs a statement through DataFusion (`SessionContext::sql`, with the
    /// statement's Fluss tables fetched together). A query's rows come as a stream
    /// when `delivery` asks for one; anything that changes something runs to its end.
    async fn query_output(&self, sql: &str, delivery: Delivery) -> Result<StatementOutput> {
        let (state, hinted) = self.hinted_state(sql)?;
        let statement = dialect::parse_statement(&state, sql).map_err(from_datafusion)?;
        let statement = explicit_casts::keep_explicit_casts(update_from::as_merge(statement));
        let tables = self.fluss_tables_of(&state, &statement)?;
        let reads_only = statement::reads_only(&statement);
        let delivery = if reads_only {
            delivery
        } else {
            Delivery::Collect
        };
        let run = || self.plan_and_run(&state, statement.clone(), hinted, delivery);
        let outcome = if reads_only {
            let max_age = metadata_max_age(&state);
            with_tables_confirmed(self.source.as_ref(), &tables, max_age, run).await
        } else {
            with_tables_prefetched(self.source.as_ref(), &tables, run()).await
        };
        match outcome {
            Ok(output) => Ok(output),
            Err(e) => Err(self.failure_among(&tables, e).await),
        }
    }

    /// `CREATE TABLE t [(PRIMARY KEY ...)] [WITH (...)] AS query`: a table with the
    /// query's columns (Fluss types of its Arrow types, nullability kept), then an
    /// INSERT of its rows through DataFusion. A failed INSERT drops the table again,
    /// so a CTAS leaves a full table or none. With `IF NOT EXISTS` and the table
    /// there, nothing is written (as Flink does).
    async fn create_table_as(
        &self,
        mut spec: ddl::CreateTable,
        query: &str,
    ) -> Result<StatementResult> {
        let path = self.table_path(&spec.name)?;
        let writer = self.writer("CREATE TABLE ... AS SELECT")?;
        if spec.if_not_exists && self.source.get_table(&path).await.is_ok() {
            return Ok(StatementResult::empty());
        }
        let df = self.ctx.sql(query).await.map_err(from_datafusion)?;
        for field in df.schema().fields() {
            let data_type = fluss::record::from_arrow_field(field).map_err(|e| {
                Error::unsupported(format!(
                    "column '{}' of the query has type {}, which no Fluss type holds",
                    field.name(),
                    field.data_type()
                ))
                .with_source(e)
            })?;
            spec.columns.push((field.name().clone(), data_type, None));
        }
        let descriptor = ddl::descriptor(&spec)?;
        writer.create_table(&path, &descriptor, false).await?;
        let insert = format!(
            "INSERT INTO {}.{}.{} {query}",
            CATALOG,
            parse::quote_ident(path.database()),
            parse::quote_ident(path.table())
        );
        match self.query(&insert).await {
            Ok(result) => Ok(result),
            Err(e) => {
                if let Err(dropped) = writer.drop_table(&path, true).await {
                    return Err(
                        e.with_context("dropping the new table failed", dropped.to_string())
                    );
                }
                Err(e)
            }
        }
    }

    /// The Fluss table `name` names, or `None` when it names something else (a
    /// virtual table, an external table or view of the session, nothing).
    async fn fluss_table_named(&self, name: &[String]) -> Result<Option<FlussTable>> {
        if name.iter().any(|part| part.contains('$')) {
            return Ok(None);
        }
        let Ok(path) = self.table_path(name) else {
            return Ok(None);
        };
        match self.source.get_table(&path).await {
            Ok(table) => Ok(Some(table)),
            Err(e) if e.kind() == crate::error::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// For the first of `tables` that does not exist: a not-found error suggesting the
    /// closest existing database or table name, when one is close enough.
    async fn missing_among(&self, tables: &[TablePath]) -> Option<Error> {
        let databases = self.source.list_databases().await.ok()?;
        for path in tables {
            let (db, table) = (path.database(), path.table());
            if !databases.iter().any(|d| d == db) {
                let best = suggest::closest(db, databases.iter().map(String::as_str))?;
                return Some(Error::not_found(format!(
                    "database '{db}' does not exist; did you mean '{best}'?"
                )));
            }
            let names =
                datafusion::catalog::CatalogProvider::schema(&self.catalog, db)?.table_names();
            let base = table.split_once('$').map_or(table, |(b, _)| b);
            if names.iter().any(|n| n == base) {
                continue;
            }
            let best = suggest::closest(base, names.iter().map(String::as_str))?;
            let suffix = table.strip_prefix(base).unwrap_or_default();
            return Some(Error::not_found(format!(
                "table '{db}.{table}' not found; did you mean '{db}.{best}{suffix}'?"
            )));
        }
        None
    }

    /// The damage of the first of `tables` whose metadata cannot be read, if any.
    async fn damage_among(&self, tables: &[TablePath]) -> Option<Error> {
        for path in tables {
            if let Err(e) = self.source.get_table(path).await
                && e.kind() == crate::error::ErrorKind::DataInvalid
            {
                return Some(crate::provider::damaged_table_error(path, &e));
            }
        }
        None
    }

    /// Plans and runs one DataFusion statement: its rows collected, or as a stream
    /// when `delivery` asks for one.
    async fn plan_and_run(
        &self,
        state: &datafusion::execution::SessionState,
        statement: datafusion::sql::parser::Statement,
        hinted: bool,
        delivery: Delivery,
    ) -> Result<StatementOutput> {
        // an error of an earlier listing is not this statement's
        self.catalog.take_listing_error();
        let plan = state
            .statement_to_plan(statement)
            .await
            .map_err(from_datafusion)?;
        if let (Some(render), LogicalPlan::Explain(explain)) = (&self.explain_renderer, &plan)
            && !explain.verbose
        {
            let (schema, batches) = self.rendered_explain(state, &explain.plan, render).await?;
            return Ok(StatementOutput::Done(StatementResult {
                schema,
                batches,
                notice: None,
            }));
        }
        // a statement whose hints set options runs on its own state; DDL and SET
        // change the session, so they always go through it
        let own_state = !matches!(
            plan,
            datafusion::logical_expr::LogicalPlan::Ddl(_)
                | datafusion::logical_expr::LogicalPlan::Statement(_)
        ) && hinted;
        let df = if own_state {
            datafusion::dataframe::DataFrame::new(state.clone(), plan)
        } else {
            self.ctx
                .execute_logical_plan(plan)
                .await
                .map_err(from_datafusion)?
        };
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        if delivery == Delivery::Stream {
            let stream = df.execute_stream().await.map_err(from_datafusion)?;
            return Ok(StatementOutput::Rows {
                stream: self.listing_checked_at_end(stream),
                notice: None,
            });
        }
        let batches = df.collect().await.map_err(from_datafusion)?;
        if let Some(e) = self.catalog.take_listing_error() {
            return Err(listing_failed(e));
        }
        Ok(StatementOutput::Done(StatementResult {
            schema,
            batches,
            notice: None,
        }))
    }

    /// `stream`, failing at its end when a catalog listing it made failed (as a
    /// collected statement does).
    fn listing_checked_at_end(
        &self,
        stream: datafusion::execution::SendableRecordBatchStream,
    ) -> datafusion::execution::SendableRecordBatchStream {
        use futures::StreamExt;
        let catalog = self.catalog.clone();
        let schema = stream.schema();
        let end = futures::stream::once(async move {
            catalog
                .take_listing_error()
                .map(|e| Err(datafusion::error::DataFusionError::from(listing_failed(e))))
        })
        .filter_map(futures::future::ready);
        Box::pin(
            datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                schema,
                stream.chain(end),
            ),
        )
    }

    /// `EXPLAIN` of `plan` as DataFusion shows it (a `plan_type` and a `plan`
    /// column), its physical plan planned through the session's query planner and
    /// shown by `render`.
    async fn rendered_explain(
        &self,
        state: &datafusion::execution::SessionState,
        plan: &LogicalPlan,
        render: &ExplainRenderer,
    ) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let optimized = state.optimize(plan).map_err(from_datafusion)?;
        let physical = state
            .create_physical_plan(plan)
            .await
            .map_err(from_datafusion)?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("plan_type", DataType::Utf8, false),
            Field::new("plan", DataType::Utf8, false),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec!["logical_plan", "physical_plan"])),
                Arc::new(StringArray::from(vec![
                    optimized.display_indent().to_string(),
                    render(physical.as_ref()),
                ])),
            ],
        )?;
        Ok((schema, vec![batch]))
    }

    /// The Fluss tables a statement names (a virtual table names its base table),
    /// resolved as DataFusion resolves them.
    fn fluss_tables_of(
        &self,
        state: &datafusion::execution::SessionState,
        statement: &datafusion::sql::parser::Statement,
    ) -> Result<Vec<TablePath>> {
        let options = state.config().options();
        let (catalog, database) = (
            options.catalog.default_catalog.as_str(),
            options.catalog.default_schema.as_str(),
        );
        let mut paths: Vec<TablePath> = Vec::new();
        for reference in state
            .resolve_table_references(statement)
            .map_err(from_datafusion)?
        {
            let resolved = reference.resolve(catalog, database);
            if *resolved.catalog != *CATALOG || *resolved.schema == *"information_schema" {
                continue;
            }
            if let Some((path, _)) = fluss_table_of(&resolved.schema, &resolved.table)
                && !paths.contains(&path)
            {
                paths.push(path);
            }
        }
        Ok(paths)
    }

    /// Resolves `t`, `db.t` or `fluss.db.t` against the current database.
    pub fn table_path(&self, name: &[String]) -> Result<TablePath> {
        match name {
            [t] => Ok(TablePath::new(self.current_database(), t.as_str())),
            [db, t] => Ok(TablePath::new(db.as_str(), t.as_str())),
            [catalog, db, t] if catalog == CATALOG => Ok(TablePath::new(db.as_str(), t.as_str())),
            _ => Err(Error::invalid_input(format!(
                "'{}' is not a table of the '{CATALOG}' catalog",
                name.join(".")
            ))),
        }
    }
}

/// `db` or `fluss.db`.
fn database_name(name: &[String]) -> Result<String> {
    match name {
        [db] => Ok(db.clone()),
        [catalog, db] if catalog == CATALOG => Ok(db.clone()),
        _ => Err(Error::invalid_input(format!(
            "'{}' is not a database of the '{CATALOG}' catalog",
            name.join(".")
        ))),
    }
}

/// `SET 'key' = 'value'`, Flink's form. The settings of Flink's SQL client and its
/// runtime mode are what its quickstarts begin with: accepted with a notice of what
/// they mean here. Any other key is DataFusion's `SET key = 'value'`.
async fn flink_setting(session: &FlussSession, key: &str, value: &str) -> Result<StatementResult> {
    let notice = if key.starts_with("sql-client.") {
        format!(
            "'{key}' is a setting of Flink's SQL client and has no effect here (results \
             print as tables; the shell's --format chooses how)"
        )
    } else if key == "execution.runtime-mode" {
        if !value.eq_ignore_ascii_case("batch") {
            return Err(Error::unsupported(format!(
                "execution.runtime-mode '{value}' is not supported: every query reads its \
                 tables as of planning and ends (batch)"
            )));
        }
        "queries here always run in batch mode".to_string()
    } else if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err(Error::invalid_input(format!(
            "'{key}' is not a setting name"
        )));
    } else {
        let sql = format!("SET {key} = '{}'", value.replace('\'', "''"));
        return session.query(&sql).await;
    };
    let mut result = StatementResult::empty();
    result.notice = Some(notice);
    Ok(result)
}

/// The session options (`fluss.<name>`, value) a hint's `OPTIONS(...)` sets: Fluss's
/// client options this crate applies to one statement
/// (`client.scanner.kv.batch-strategy`). Other options are not applied.
fn applied_hint_options(hint: &str) -> Vec<(&'static str, String)> {
    parse::hint_options(hint)
        .into_iter()
        .filter_map(|(key, value)| {
            (key == "client.scanner.kv.batch-strategy")
                .then_some(("fluss.kv_batch_strategy", value))
        })
        .collect()
}

/// How old cached table metadata may be before a read confirms it
/// (`fluss.metadata_max_age_ms`).
fn metadata_max_age(state: &datafusion::execution::SessionState) -> std::time::Duration {
    let millis = state
        .config()
        .options()
        .extensions
        .get::<FlussOptions>()
        .map_or(0, |o| o.metadata_max_age_ms);
    std::time::Duration::from_millis(millis)
}

/// The error of a statement whose catalog listing failed with `e`.
fn listing_failed(e: Error) -> Error {
    e.with_context("statement", "listing the catalog")
}

/// The depth `sql` nests expressions to, or the error refusing a statement nested
/// deeper than [`MAX_EXPRESSION_DEPTH`].
fn checked_depth(sql: &str) -> Result<usize> {
    let depth = parse::expression_depth(sql)?;
    if depth > MAX_EXPRESSION_DEPTH {
        return Err(Error::invalid_input(format!(
            "the statement nests expressions {depth} levels deep (at most \
             {MAX_EXPRESSION_DEPTH}: planning time grows with the square of an operator \
             chain's length; write a long OR of equalities as IN (...), or split the \
             expression over subqueries)"
        )));
    }
    Ok(depth)
}

/// What the user should know about a query that ran: hints it did not apply, or a
/// session object (an external table, a view) that is not stored in the catalog.
fn query_notice(sql: &str) -> Option<String> {
    let hints: Vec<String> = parse::hints(sql)
        .into_iter()
        .filter(|h| applied_hint_options(h).is_empty())
        .collect();
    if !hints.is_empty() {
        return Some(format!(
            "hints are not applied: /*+ {} */ (every read here is the union of the lake \
             snapshot and the log tail as of planning)",
            hints.join(" ")
        ));
    }
    statement::session_object(sql).map(|kind| {
        format!("the {kind} lasts for this session only: it is not stored in the Fluss catalog")
    })
}
