package org.fluss_datafusion.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.client.admin.OffsetSpec;
import org.apache.fluss.client.metadata.LakeSnapshot;
import org.apache.fluss.client.table.Table;
import org.apache.fluss.client.table.writer.AppendWriter;
import org.apache.fluss.client.table.writer.Upsert;
import org.apache.fluss.client.table.writer.UpsertWriter;
import org.apache.fluss.config.ConfigOptions;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.flink.tiering.LakeTieringJobBuilder;
import org.apache.fluss.metadata.PartitionInfo;
import org.apache.fluss.metadata.PartitionSpec;
import org.apache.fluss.metadata.TableBucket;
import org.apache.fluss.metadata.TableInfo;
import org.apache.fluss.metadata.TablePath;
import org.apache.fluss.row.GenericRow;
import org.apache.fluss.types.RowType;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/** The commands of the protocol (README.md here), one method each. */
final class Commands implements AutoCloseable {
    private final String format;
    private final Map<String, String> lakeConf;
    private final LocalCluster cluster;
    private final Path workDir;
    private Connection connection;
    private Admin admin;
    private StreamTableEnvironment flinkBatch;
    private JobClient tieringJob;

    Commands(
            String format,
            Map<String, String> lakeConf,
            LocalCluster cluster,
            Path workDir) {
        this.format = format;
        this.lakeConf = lakeConf;
        this.cluster = cluster;
        this.workDir = workDir;
        connect();
    }

    private void connect() {
        connection = ConnectionFactory.createConnection(cluster.clientConfig());
        admin = connection.getAdmin();
    }

    /** The batch TableEnvironment with the Fluss catalog {@code fc}, made on first use. */
    private StreamTableEnvironment flink() {
        if (flinkBatch == null) {
            flinkBatch = tableEnvironment(EnvironmentSettings.inBatchMode());
        }
        return flinkBatch;
    }

    ObjectNode run(JsonNode command) {
        ObjectNode reply = Harness.JSON.createObjectNode();
        String name = command.path("cmd").asText();
        try {
            switch (name) {
                case "sql":
                    sql(command);
                    settle();
                    break;
                case "query":
                    query(command, reply);
                    break;
                case "stream_query":
                    streamQuery(command, reply);
                    break;
                case "write":
                    reply.put("rows", write(command));
                    break;
                case "load":
                    reply.put("rows", load(command));
                    break;
                case "create_partition":
                    admin.createPartition(
                                    path(command),
                                    new PartitionSpec(strings(command.path("spec"))),
                                    true)
                            .get();
                    settle();
                    break;
                case "drop_partition":
                    admin.dropPartition(
                                    path(command),
                                    new PartitionSpec(strings(command.path("spec"))),
                                    true)
                            .get();
                    break;
                case "tier":
                    tier(command, reply);
                    break;
                case "stop_tiering":
                    stopTiering();
                    break;
                case "offsets":
                    reply.set("offsets", offsets(path(command)));
                    break;
                case "buckets":
                    reply.set("buckets", buckets(path(command)));
                    break;
                case "lake_snapshot":
                    lakeSnapshot(command, reply);
                    break;
                case "table_info":
                    tableInfo(command, reply);
                    break;
                case "zk_get":
                    zkGet(command, reply);
                    break;
                case "zk_children":
                    zkChildren(command, reply);
                    break;
                case "stop_tablet_server":
                    cluster.stopTabletServer(command.path("id").asInt());
                    break;
                case "start_tablet_server":
                    cluster.startTabletServer(command.path("id").asInt());
                    cluster.waitForServers(1 + cluster.runningTabletServers());
                    break;
                case "restart_coordinator":
                    cluster.stopCoordinator();
                    cluster.startCoordinator();
                    cluster.waitForServers(1 + cluster.runningTabletServers());
                    reconnect();
                    reply.put("bootstrap_servers", cluster.bootstrapServers());
                    break;
                case "tablet_server_dir":
                    reply.put("dir", cluster.tabletServerDataDir(command.path("id").asInt()).toString());
                    break;
                case "info":
                    reply.put("bootstrap_servers", cluster.bootstrapServers());
                    reply.put("remote_data_dir", cluster.remoteDataDir());
                    reply.put("warehouse", lakeConf.get("warehouse"));
                    break;
                case "settle":
                    settle();
                    break;
                case "shutdown":
                    break;
                default:
                    throw new IllegalArgumentException("unknown command '" + name + "'");
            }
            reply.put("ok", true);
        } catch (Throwable t) {
            Harness.JSON.createObjectNode();
            reply.removeAll();
            reply.put("ok", false);
            reply.put("error", describe(t));
            t.printStackTrace();
        }
        return reply;
    }

    /** The message of a failure and its causes, without stack frames. */
    static String describe(Throwable t) {
        StringBuilder s = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof ExecutionException && c.getCause() != null) {
                continue;
            }
            if (s.length() > 0) {
                s.append(" | caused by: ");
            }
            s.append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
            if (c.getCause() == c) {
                break;
            }
        }
        return s.toString();
    }

    /**
     * Returns once the coordinator has taken in every table and partition ZooKeeper holds.
     *
     * <p>Fluss 0.9.1's coordinator can miss a table's creation: its CuratorCache may report
     * the table's znode as created with the table's data already in it and never report the
     * change the watcher waits for (apache/fluss #2710, fixed in {@code TableChangeWatcher}
     * after 0.9). The table's buckets then never get a leader, and a partition created for it
     * throws in the coordinator and leaves its request batch broken for every later event
     * ("The NotifyLeaderAndIsr batch request ... is not empty"). A coordinator that starts
     * loads every table from ZooKeeper, so one that has missed a table is restarted, as an
     * operator would, before anything is written to the table.
     */
    private void settle() throws Exception {
        java.util.Set<Long> tables = new java.util.HashSet<>();
        java.util.Set<Long> partitions = new java.util.HashSet<>();
        for (String database : admin.listDatabases().get()) {
            for (String table : admin.listTables(database).get()) {
                TablePath path = TablePath.of(database, table);
                TableInfo info;
                try {
                    info = admin.getTableInfo(path).get();
                } catch (ExecutionException e) {
                    continue; // dropped meanwhile
                }
                tables.add(info.getTableId());
                if (info.isPartitioned()) {
                    for (PartitionInfo p : admin.listPartitionInfos(path).get()) {
                        partitions.add(p.getPartitionId());
                    }
                }
            }
        }
        for (int restart = 0; ; restart++) {
            // a busy coordinator takes its events in milliseconds; a missed one never
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (System.nanoTime() < deadline) {
                if (cluster.coordinatorKnows(tables, partitions)) {
                    return;
                }
                Thread.sleep(100);
            }
            if (restart == 2) {
                throw new IllegalStateException(
                        "the coordinator does not know tables " + tables + " / partitions "
                                + partitions + " after two restarts");
            }
            System.err.println(
                    "== the coordinator missed a table or partition in ZooKeeper (apache/fluss"
                            + " #2710); restarting it");
            cluster.stopCoordinator();
            cluster.startCoordinator();
            cluster.waitForServers(1 + cluster.runningTabletServers());
            reconnect();
        }
    }

    private void reconnect() throws Exception {
        admin.close();
        connection.close();
        connect();
        if (flinkBatch != null) {
            // the catalog holds a connection of its own: make a new environment
            flinkBatch = null;
        }
    }

    private static TablePath path(JsonNode command) {
        String[] parts = command.path("table").asText().split("\\.", 2);
        if (parts.length != 2) {
            throw new IllegalArgumentException("'table' must be <db>.<table>");
        }
        return TablePath.of(parts[0], parts[1]);
    }

    private static Map<String, String> strings(JsonNode object) {
        Map<String, String> m = new LinkedHashMap<>();
        object.fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
        return m;
    }

    // ------------------------------------------------------------------ Flink

    /** DDL (or any statement) through Flink's Fluss catalog, waited for. */
    private void sql(JsonNode command) throws Exception {
        flink().executeSql(command.path("sql").asText()).await();
    }

    /**
     * A batch query through Flink (the union read, {@code t$lake}): rows as canonical text
     * ({@link Values#text}), and written as CSV to {@code csv} when given.
     */
    private void query(JsonNode command, ObjectNode reply) throws Exception {
        TableResult result = flink().executeSql(command.path("sql").asText());
        // A query that does not end in time is cancelled (Fluss 0.9.1's batch union read
        // waits forever on a bucket that has neither lake data nor log: apache/fluss #2958).
        long timeoutSeconds = command.path("timeout_s").asLong(120);
        if (failedAfterDeadline(result, timeoutSeconds, () -> collect(command, result, reply))) {
            throw new java.util.concurrent.TimeoutException(
                    "the Flink query did not finish in " + timeoutSeconds + " s (cancelled)");
        }
    }

    /**
     * The first {@code rows} rows of a streaming query (Flink reads {@code $changelog} and
     * {@code $binlog} only as streams): collected, then the job is cancelled. Fewer rows
     * within {@code timeout_s} is an error naming how many came.
     */
    private void streamQuery(JsonNode command, ObjectNode reply) throws Exception {
        int want = command.path("rows").asInt();
        long timeoutSeconds = command.path("timeout_s").asLong(120);
        TableResult result = flinkStreaming().executeSql(command.path("sql").asText());
        ArrayNode rows = reply.putArray("rows");
        int[] got = {0};
        try {
            failedAfterDeadline(
                    result,
                    timeoutSeconds,
                    () -> {
                        try (CloseableIterator<Row> it = result.collect()) {
                            while (got[0] < want && it.hasNext()) {
                                Row row = it.next();
                                ArrayNode out = rows.addArray();
                                for (int i = 0; i < row.getArity(); i++) {
                                    out.add(Values.text(row.getField(i)));
                                }
                                got[0]++;
                            }
                        }
                    });
        } finally {
            result.getJobClient().ifPresent(JobClient::cancel);
        }
        if (got[0] < want) {
            throw new java.util.concurrent.TimeoutException(
                    "the streaming query gave " + got[0] + " of " + want + " rows in "
                            + timeoutSeconds + " s");
        }
    }

    /** What {@link #failedAfterDeadline} runs. */
    private interface Work {
        void run() throws Exception;
    }

    /**
     * Runs {@code work}, cancelling {@code result}'s job once {@code timeoutSeconds} have
     * passed. A failure after that cancel is the cancel's doing: it answers {@code true}
     * (the caller names the timeout); any other failure is thrown.
     */
    private static boolean failedAfterDeadline(TableResult result, long timeoutSeconds, Work work)
            throws Exception {
        java.util.concurrent.atomic.AtomicBoolean timedOut =
                new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.ScheduledFuture<?> canceller =
                TIMER.schedule(
                        () -> {
                            timedOut.set(true);
                            result.getJobClient().ifPresent(JobClient::cancel);
                        },
                        timeoutSeconds,
                        java.util.concurrent.TimeUnit.SECONDS);
        try {
            work.run();
            return false;
        } catch (Exception e) {
            if (timedOut.get()) {
                return true;
            }
            throw e;
        } finally {
            canceller.cancel(false);
        }
    }

    /** The streaming TableEnvironment with the Fluss catalog {@code fc}, made on first use. */
    private StreamTableEnvironment flinkStreaming() {
        if (flinkStream == null) {
            flinkStream = tableEnvironment(EnvironmentSettings.inStreamingMode());
        }
        return flinkStream;
    }

    /** A TableEnvironment of parallelism 1 using the Fluss catalog {@code fc}. */
    private StreamTableEnvironment tableEnvironment(EnvironmentSettings settings) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tables = StreamTableEnvironment.create(env, settings);
        tables.getConfig().set("table.exec.resource.default-parallelism", "1");
        tables.executeSql(
                String.format(
                        "CREATE CATALOG fc WITH ('type' = 'fluss', 'bootstrap.servers' = '%s')",
                        cluster.bootstrapServers()));
        tables.executeSql("USE CATALOG fc");
        return tables;
    }

    private StreamTableEnvironment flinkStream;

    private static final java.util.concurrent.ScheduledExecutorService TIMER =
            java.util.concurrent.Executors.newSingleThreadScheduledExecutor(
                    r -> {
                        Thread t = new Thread(r, "query-timeout");
                        t.setDaemon(true);
                        return t;
                    });

    private void collect(JsonNode command, TableResult result, ObjectNode reply) throws Exception {
        ArrayNode columns = reply.putArray("columns");
        for (String c : result.getResolvedSchema().getColumnNames()) {
            columns.add(c);
        }
        ArrayNode rows = reply.putArray("rows");
        StringBuilder csv = new StringBuilder();
        boolean countOnly = command.path("count_only").asBoolean(false);
        long count = 0;
        try (CloseableIterator<Row> it = result.collect()) {
            while (it.hasNext()) {
                Row row = it.next();
                count++;
                if (countOnly) {
                    continue;
                }
                ArrayNode out = rows.addArray();
                for (int i = 0; i < row.getArity(); i++) {
                    String v = Values.text(row.getField(i));
                    out.add(v);
                    if (i > 0) {
                        csv.append(',');
                    }
                    csv.append(v == null ? "" : csvField(v));
                }
                csv.append('\n');
            }
        }
        reply.put("row_count", count);
        if (command.hasNonNull("csv")) {
            Files.writeString(Path.of(command.path("csv").asText()), csv, StandardCharsets.UTF_8);
        }
    }

    private static String csvField(String v) {
        if (v.isEmpty() || v.contains(",") || v.contains("\"") || v.contains("\n")) {
            return '"' + v.replace("\"", "\"\"") + '"';
        }
        return v;
    }

    // ------------------------------------------------------------------ writes

    /**
     * Rows through the Java client: {@code op} = append (log tables), upsert or delete (PK
     * tables); {@code columns} names the values of each row (default: every column), and for
     * an upsert it makes a partial update of those columns.
     */
    private int write(JsonNode command) throws Exception {
        TablePath path = path(command);
        String op = command.path("op").asText();
        try (Table table = connection.getTable(path)) {
            RowType rowType = table.getTableInfo().getRowType();
            List<String> columns = new ArrayList<>();
            boolean partial = command.hasNonNull("columns");
            if (partial) {
                command.path("columns").forEach(c -> columns.add(c.asText()));
            } else {
                columns.addAll(rowType.getFieldNames());
            }
            List<GenericRow> rows = new ArrayList<>();
            for (JsonNode values : command.path("rows")) {
                rows.add(Values.row(rowType, columns, values));
            }
            switch (op) {
                case "append":
                    {
                        AppendWriter writer = table.newAppend().createWriter();
                        for (GenericRow row : rows) {
                            writer.append(row);
                        }
                        writer.flush();
                        break;
                    }
                case "upsert":
                case "delete":
                    {
                        Upsert upsert = table.newUpsert();
                        if (partial && op.equals("upsert")) {
                            upsert = upsert.partialUpdate(columns.toArray(new String[0]));
                        }
                        UpsertWriter writer = upsert.createWriter();
                        for (GenericRow row : rows) {
                            if (op.equals("upsert")) {
                                writer.upsert(row);
                            } else {
                                writer.delete(row);
                            }
                        }
                        writer.flush();
                        break;
                    }
                default:
                    throw new IllegalArgumentException("op must be append, upsert or delete");
            }
            return rows.size();
        }
    }

    /**
     * Rows from a text file through the Java client (bulk loads for benchmarks): one row
     * per line, fields separated by {@code delimiter} (default tab) in column order, each
     * in the JSON protocol's text form; an empty field is NULL. {@code op}: append, upsert,
     * or changes (PK tables: each line starts with a field {@code +} for an upsert or
     * {@code -} for a delete, so one file keeps a history's order).
     */
    private long load(JsonNode command) throws Exception {
        TablePath path = path(command);
        String op = command.path("op").asText("append");
        String delimiter =
                java.util.regex.Pattern.quote(command.path("delimiter").asText("\t"));
        long rows = 0;
        try (Table table = connection.getTable(path);
                java.io.BufferedReader reader =
                        Files.newBufferedReader(
                                Path.of(command.path("file").asText()), StandardCharsets.UTF_8)) {
            RowType rowType = table.getTableInfo().getRowType();
            int width = rowType.getFieldCount();
            boolean changes = op.equals("changes");
            AppendWriter append = op.equals("append") ? table.newAppend().createWriter() : null;
            UpsertWriter upsert =
                    op.equals("upsert") || changes ? table.newUpsert().createWriter() : null;
            if (append == null && upsert == null) {
                throw new IllegalArgumentException("op must be append, upsert or changes");
            }
            int first = changes ? 1 : 0;
            String line;
            while ((line = reader.readLine()) != null) {
                String[] fields = line.split(delimiter, -1);
                if (fields.length < width + first) {
                    throw new IllegalArgumentException(
                            "line " + (rows + 1) + " has " + fields.length + " fields, not "
                                    + (width + first));
                }
                boolean delete = changes && fields[0].equals("-");
                if (changes && !delete && !fields[0].equals("+")) {
                    throw new IllegalArgumentException(
                            "line " + (rows + 1) + " does not start with + or -");
                }
                GenericRow row = new GenericRow(width);
                for (int i = 0; i < width; i++) {
                    if (!fields[i + first].isEmpty()) {
                        row.setField(
                                i,
                                Values.internal(
                                        rowType.getTypeAt(i),
                                        com.fasterxml.jackson.databind.node.TextNode.valueOf(
                                                fields[i + first])));
                    }
                }
                if (append != null) {
                    append.append(row);
                } else if (delete) {
                    upsert.delete(row);
                } else {
                    upsert.upsert(row);
                }
                rows++;
            }
            if (append != null) {
                append.flush();
            } else {
                upsert.flush();
            }
        }
        return rows;
    }

    // ------------------------------------------------------------------ offsets and tiering

    /** Latest offsets of every bucket: {"<partition or ''>": {"<bucket>": offset}}. */
    private ObjectNode offsets(TablePath path) throws Exception {
        TableInfo info = admin.getTableInfo(path).get();
        List<Integer> buckets = new ArrayList<>();
        for (int b = 0; b < info.getNumBuckets(); b++) {
            buckets.add(b);
        }
        ObjectNode out = Harness.JSON.createObjectNode();
        if (info.getPartitionKeys().isEmpty()) {
            Map<Integer, Long> o =
                    admin.listOffsets(path, buckets, new OffsetSpec.LatestSpec()).all().get();
            ObjectNode p = out.putObject("");
            o.forEach((b, v) -> p.put(String.valueOf(b), v));
        } else {
            for (PartitionInfo partition : admin.listPartitionInfos(path).get()) {
                Map<Integer, Long> o =
                        admin.listOffsets(
                                        path,
                                        partition.getPartitionName(),
                                        buckets,
                                        new OffsetSpec.LatestSpec())
                                .all()
                                .get();
                ObjectNode p = out.putObject(partition.getPartitionName());
                o.forEach((b, v) -> p.put(String.valueOf(b), v));
            }
        }
        return out;
    }

    /** Latest offsets of every bucket as table buckets. */
    private Map<TableBucket, Long> targets(TablePath path) throws Exception {
        TableInfo info = admin.getTableInfo(path).get();
        Map<TableBucket, Long> targets = new HashMap<>();
        List<Integer> buckets = new ArrayList<>();
        for (int b = 0; b < info.getNumBuckets(); b++) {
            buckets.add(b);
        }
        if (info.getPartitionKeys().isEmpty()) {
            admin.listOffsets(path, buckets, new OffsetSpec.LatestSpec())
                    .all()
                    .get()
                    .forEach((b, o) -> targets.put(new TableBucket(info.getTableId(), b), o));
        } else {
            for (PartitionInfo p : admin.listPartitionInfos(path).get()) {
                admin.listOffsets(path, p.getPartitionName(), buckets, new OffsetSpec.LatestSpec())
                        .all()
                        .get()
                        .forEach(
                                (b, o) ->
                                        targets.put(
                                                new TableBucket(
                                                        info.getTableId(), p.getPartitionId(), b),
                                                o));
            }
        }
        return targets;
    }

    /**
     * Freshness of a table nobody is tiering: tables are created with it (the Rust side's
     * DDL, {@code fluss_test_support::real_fluss::PAUSED_FRESHNESS}), so the coordinator
     * schedules them a day out and what is written to them stays in the log tail.
     */
    static final String PAUSED_FRESHNESS = "1d";

    /** Freshness of a table being tiered: the coordinator offers it every half second. */
    static final String ACTIVE_FRESHNESS = "500ms";

    private static final String FRESHNESS = "table.datalake.freshness";

    /** Tables a {@code tier} with {@code keep_running} left tiering. */
    private final java.util.Set<TablePath> tiering = new java.util.LinkedHashSet<>();

    /**
     * Tiers the given tables until the latest lake snapshot of each covers the offsets its
     * buckets had when the command came, then pauses them again (so what is written
     * afterwards stays in the log tail), unless {@code keep_running}.
     *
     * <p>One tiering job runs for the harness's whole life; tables are paused and resumed by
     * their {@code table.datalake.freshness} (an alterable option, {@code
     * FlussConfigUtils.ALTERABLE_TABLE_OPTIONS}; the coordinator reschedules a Scheduled table
     * with the new value, {@code LakeTableTieringManager.updateTableLakeFreshness}). Cancelling
     * the job instead, as this harness first did, takes 6 s each time, and a cancel that lands
     * after the job asked for a table leaves that table assigned to the dead job until the
     * coordinator's hard-coded 2-minute {@code TIERING_SERVICE_TIMEOUT_MS}: the next tiering
     * of that table then waited about 130 s.
     */
    private void tier(JsonNode command, ObjectNode reply) throws Exception {
        long deadline =
                System.nanoTime()
                        + Duration.ofSeconds(command.path("timeout_s").asLong(300)).toNanos();
        Map<TablePath, Map<TableBucket, Long>> targets = new LinkedHashMap<>();
        for (JsonNode t : command.path("tables")) {
            TablePath path = TablePath.of(t.asText().split("\\.", 2)[0], t.asText().split("\\.", 2)[1]);
            targets.put(path, targets(path));
        }
        ensureTieringJob();
        boolean keepRunning = command.path("keep_running").asBoolean(false);
        ObjectNode snapshots = reply.putObject("snapshots");
        long start = System.nanoTime();
        try {
            for (TablePath path : targets.keySet()) {
                setFreshness(path, ACTIVE_FRESHNESS);
            }
            for (Map.Entry<TablePath, Map<TableBucket, Long>> e : targets.entrySet()) {
                long id = waitCovered(e.getKey(), e.getValue(), deadline);
                snapshots.put(e.getKey().toString(), id);
                System.out.printf(
                        "tier: %s covered by snapshot %d after %.1f s%n",
                        e.getKey(), id, (System.nanoTime() - start) / 1e9);
            }
        } finally {
            if (keepRunning) {
                tiering.addAll(targets.keySet());
            } else {
                for (TablePath path : targets.keySet()) {
                    pause(path, deadline);
                }
            }
        }
        reply.put("seconds", (System.nanoTime() - start) / 1e9);
    }

    /** Pauses every table a {@code tier} with {@code keep_running} left tiering. */
    private void stopTiering() throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        for (TablePath path : new ArrayList<>(tiering)) {
            pause(path, deadline);
        }
    }

    private void setFreshness(TablePath path, String freshness) throws Exception {
        admin.alterTable(path, List.of(org.apache.fluss.metadata.TableChange.set(FRESHNESS, freshness)), false)
                .get();
    }

    /**
     * Gives the table its paused freshness back and waits until the coordinator has it
     * Scheduled under that freshness: a round it had already queued (Pending) or started
     * then has taken its stopping offsets, so a write after this stays in the tail.
     */
    private void pause(TablePath path, long deadline) throws Exception {
        tiering.remove(path);
        setFreshness(path, PAUSED_FRESHNESS);
        long tableId = admin.getTableInfo(path).get().getTableId();
        long paused = Duration.ofDays(1).toMillis();
        String state = null;
        while (System.nanoTime() < deadline) {
            state = cluster.tieringState(tableId, paused);
            if ("Scheduled".equals(state)) {
                return;
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException(
                "tiering of " + path + " did not pause (coordinator state " + state + ")");
    }

    private long waitCovered(TablePath path, Map<TableBucket, Long> targets, long deadline)
            throws Exception {
        if (targets.values().stream().allMatch(offset -> offset == 0)) {
            // nothing written: nothing to tier (and no snapshot will come)
            return -1;
        }
        String missing = "no lake snapshot";
        while (System.nanoTime() < deadline) {
            LakeSnapshot snapshot = latestLakeSnapshot(path);
            if (snapshot != null) {
                missing = null;
                for (Map.Entry<TableBucket, Long> t : targets.entrySet()) {
                    long tiered = snapshot.getTableBucketsOffset().getOrDefault(t.getKey(), 0L);
                    if (tiered < t.getValue()) {
                        missing = t.getKey() + " tiered to " + tiered + " of " + t.getValue();
                        break;
                    }
                }
                if (missing == null) {
                    return snapshot.getSnapshotId();
                }
            }
            if (tieringJob != null && tieringJob.getJobStatus().get().isGloballyTerminalState()) {
                throw new IllegalStateException(
                        "the tiering job ended: " + tieringJob.getJobStatus().get());
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("tiering did not cover " + path + ": " + missing);
    }

    private LakeSnapshot latestLakeSnapshot(TablePath path) throws Exception {
        try {
            return admin.getLatestLakeSnapshot(path).get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause != null
                    && cause.getClass().getSimpleName().equals("LakeTableSnapshotNotExistException")) {
                return null;
            }
            // The coordinator could not open the offsets file ZooKeeper names for the
            // snapshot (LakeTable.toLakeTableSnapshot: FileNotFoundException, seen once
            // under load while the tiering job committed): ask again until the deadline.
            if (cause != null && String.valueOf(cause.getMessage()).contains("FileNotFoundException")
                    && String.valueOf(cause.getMessage()).contains(".offsets")) {
                return null;
            }
            throw e;
        }
    }

    /**
     * Starts the tiering job unless it runs (a coordinator restart can end it: it is
     * started again on the next {@code tier}).
     */
    private void ensureTieringJob() throws Exception {
        if (tieringJob != null && !tieringJob.getJobStatus().get().isGloballyTerminalState()) {
            return;
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        Configuration flussConf = new Configuration(cluster.clientConfig());
        // the service asks for a table to tier this often: with many idle tables, a short
        // interval brings the one that has rows sooner
        flussConf.setString("tiering.poll.table.interval", "100ms");
        tieringJob =
                LakeTieringJobBuilder.newBuilder(
                                env,
                                flussConf,
                                Configuration.fromMap(lakeConf),
                                new Configuration(),
                                format)
                        .build();
    }

    /** Cancels the tiering job (at shutdown) and waits until it ended. */
    private void cancelTieringJob() throws Exception {
        if (tieringJob == null) {
            return;
        }
        JobClient job = tieringJob;
        tieringJob = null;
        try {
            job.cancel().get();
        } catch (Exception e) {
            // already ended
        }
        for (int i = 0; i < 600; i++) {
            JobStatus status = job.getJobStatus().get();
            if (status.isGloballyTerminalState()) {
                return;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the tiering job did not stop");
    }

    /**
     * Every bucket of the table (of every partition Fluss has): its end offset and the
     * offset the latest lake snapshot tiered it to (null when the snapshot has none).
     */
    private ArrayNode buckets(TablePath path) throws Exception {
        LakeSnapshot snapshot = latestLakeSnapshot(path);
        Map<TableBucket, Long> lake =
                snapshot == null ? Map.of() : snapshot.getTableBucketsOffset();
        TableInfo info = admin.getTableInfo(path).get();
        Map<Long, String> names = new HashMap<>();
        if (!info.getPartitionKeys().isEmpty()) {
            for (PartitionInfo p : admin.listPartitionInfos(path).get()) {
                names.put(p.getPartitionId(), p.getPartitionName());
            }
        }
        ArrayNode out = Harness.JSON.createArrayNode();
        for (Map.Entry<TableBucket, Long> e : targets(path).entrySet()) {
            ObjectNode b = out.addObject();
            TableBucket tb = e.getKey();
            if (tb.getPartitionId() != null) {
                b.put("partition", names.get(tb.getPartitionId()));
            }
            b.put("bucket", tb.getBucket());
            b.put("end_offset", e.getValue());
            Long tiered = lake.get(tb);
            if (tiered == null) {
                b.putNull("lake_offset");
            } else {
                b.put("lake_offset", tiered);
            }
        }
        return out;
    }

    private void lakeSnapshot(JsonNode command, ObjectNode reply) throws Exception {
        LakeSnapshot snapshot = latestLakeSnapshot(path(command));
        if (snapshot == null) {
            reply.putNull("snapshot_id");
            return;
        }
        reply.put("snapshot_id", snapshot.getSnapshotId());
        ArrayNode buckets = reply.putArray("buckets");
        snapshot.getTableBucketsOffset()
                .forEach(
                        (tb, offset) -> {
                            ObjectNode b = buckets.addObject();
                            if (tb.getPartitionId() != null) {
                                b.put("partition_id", tb.getPartitionId());
                            }
                            b.put("bucket", tb.getBucket());
                            b.put("offset", offset);
                        });
    }

    private void tableInfo(JsonNode command, ObjectNode reply) throws Exception {
        TableInfo info = admin.getTableInfo(path(command)).get();
        reply.put("table_id", info.getTableId());
        reply.put("schema_id", info.getSchemaId());
        reply.put("num_buckets", info.getNumBuckets());
        ArrayNode partitions = reply.putArray("partitions");
        if (!info.getPartitionKeys().isEmpty()) {
            for (PartitionInfo p : admin.listPartitionInfos(path(command)).get()) {
                ObjectNode o = partitions.addObject();
                o.put("name", p.getPartitionName());
                o.put("id", p.getPartitionId());
            }
        }
    }

    // ------------------------------------------------------------------ ZooKeeper

    private void zkGet(JsonNode command, ObjectNode reply) throws Exception {
        byte[] data = cluster.zkData(command.path("path").asText());
        reply.put("data", data == null ? null : new String(data, StandardCharsets.UTF_8));
    }

    private void zkChildren(JsonNode command, ObjectNode reply) throws Exception {
        ArrayNode children = reply.putArray("children");
        for (String c : cluster.zkChildren(command.path("path").asText())) {
            children.add(c);
        }
    }

    @Override
    public void close() throws Exception {
        cancelTieringJob();
        admin.close();
        connection.close();
    }

    static String stack(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }
}
