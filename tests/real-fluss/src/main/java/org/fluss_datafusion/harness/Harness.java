package org.fluss_datafusion.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.fluss.config.ConfigOptions;
import org.apache.fluss.config.Configuration;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/**
 * The real-Fluss harness: one Fluss cluster (ZooKeeper, a coordinator, two tablet servers, in
 * process: {@link LocalCluster}), one Flink mini cluster shared by the
 * tiering service and Flink's batch union read, driven by JSON lines.
 *
 * <p>Usage: {@code Harness --format paimon|iceberg --work-dir DIR [--max-seconds N]}. It prints
 * {@code {"ready":true,...}} on stdout, then answers each command line on stdin with one line on
 * stdout ({@code {"ok":true,...}} or {@code {"ok":false,"error":...}}); everything else it or
 * its libraries print goes to {@code DIR/harness.log}. It stops when stdin closes (its parent
 * exited), on {@code {"cmd":"shutdown"}}, or after {@code --max-seconds} (default 1800).
 */
public final class Harness {
    static final ObjectMapper JSON = new ObjectMapper();

    private final String format;
    private final Path workDir;
    private final LocalCluster cluster;
    private final MiniCluster flink;
    private final Commands commands;

    private Harness(String format, Path workDir) throws Exception {
        this.format = format;
        this.workDir = workDir;
        Configuration conf = clusterConf(format, workDir);
        this.cluster = new LocalCluster(conf, workDir.resolve("cluster"), 2);
        cluster.start();
        this.flink = startFlink();
        this.commands = new Commands(format, lakeConf(format, workDir), cluster, workDir);
    }

    /** The cluster's configuration: the lake, and the test-speed settings of the reference. */
    static Configuration clusterConf(String format, Path workDir) {
        Configuration conf = new Configuration();
        conf.setString("datalake.format", format);
        for (Map.Entry<String, String> e : lakeConf(format, workDir).entrySet()) {
            conf.setString("datalake." + format + "." + e.getKey(), e.getValue());
        }
        // keep every KV snapshot (tiering of PK tables may start from one)
        conf.set(ConfigOptions.KV_MAX_RETAINED_SNAPSHOTS, Integer.MAX_VALUE);
        // Tiering reads the changelog, never a KV snapshot: Fluss 0.9.1's tiering re-reads
        // a bucket whose KV snapshot is empty (rows inserted then deleted) round after
        // round without ever committing its offset (TieringSplitReader.forSnapshotSplitRecords
        // makes no write result for it), so such a bucket is never tiered.
        conf.set(ConfigOptions.KV_SNAPSHOT_INTERVAL, Duration.ofHours(1));
        // two replicas: a stopped tablet server hands its buckets to the other
        conf.set(ConfigOptions.DEFAULT_REPLICATION_FACTOR, 2);
        // A write is acknowledged once the follower has fetched it (acks=all), and a
        // follower's fetch waits up to this long for data (default 500 ms per write).
        conf.setString("log.replica.fetch.wait-max-time", "10ms");
        // small segments, so remote-log and retention cases need few rows
        conf.setString("log.segment.file-size", "1mb");
        conf.setString("remote.log.task-interval-duration", "1s");
        return conf;
    }

    /** The lake catalog options (without the {@code datalake.<format>.} prefix). */
    static Map<String, String> lakeConf(String format, Path workDir) {
        Map<String, String> m = new HashMap<>();
        Path warehouse = workDir.resolve("lake").resolve(format);
        if (format.equals("paimon")) {
            m.put("metastore", "filesystem");
            m.put("warehouse", warehouse.toString());
        } else if (format.equals("iceberg")) {
            m.put("type", "hadoop");
            m.put("warehouse", warehouse.toString());
        } else {
            throw new IllegalArgumentException("unknown lake format " + format);
        }
        return m;
    }

    /** One Flink mini cluster, made the context of every StreamExecutionEnvironment. */
    private static MiniCluster startFlink() throws Exception {
        org.apache.flink.configuration.Configuration conf =
                new org.apache.flink.configuration.Configuration();
        // Benchmarks give Flink's joins and sorts more (it is split among the 4 slots).
        String managed = System.getenv("FLUSS_HARNESS_FLINK_MANAGED_MEMORY");
        conf.set(
                TaskManagerOptions.MANAGED_MEMORY_SIZE,
                MemorySize.parse(managed == null || managed.isEmpty() ? "128m" : managed));
        conf.set(TaskManagerOptions.NETWORK_MEMORY_MIN, MemorySize.parse("64m"));
        conf.set(TaskManagerOptions.NETWORK_MEMORY_MAX, MemorySize.parse("64m"));
        conf.setString("rest.bind-address", "127.0.0.1");
        conf.setString("rest.address", "127.0.0.1");
        conf.setString("jobmanager.bind-host", "127.0.0.1");
        conf.setString("taskmanager.bind-host", "127.0.0.1");
        conf.setString("taskmanager.host", "127.0.0.1");
        MiniCluster mc =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(conf)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(4)
                                .build());
        mc.start();
        TestStreamEnvironment.setAsContext(mc, 1);
        return mc;
    }

    private ObjectNode readyMessage() {
        ObjectNode m = JSON.createObjectNode();
        m.put("ready", true);
        m.put("format", format);
        m.put("bootstrap_servers", cluster.bootstrapServers());
        m.put("remote_data_dir", cluster.remoteDataDir());
        m.put("warehouse", lakeConf(format, workDir).get("warehouse"));
        return m;
    }

    public static void main(String[] args) throws Exception {
        String format = null;
        Path workDir = null;
        long maxSeconds = 1800;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--format":
                    format = args[++i];
                    break;
                case "--work-dir":
                    workDir = Path.of(args[++i]).toAbsolutePath();
                    break;
                case "--max-seconds":
                    maxSeconds = Long.parseLong(args[++i]);
                    break;
                default:
                    throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (format == null || workDir == null) {
            throw new IllegalArgumentException("usage: --format paimon|iceberg --work-dir DIR");
        }
        Files.createDirectories(workDir);
        // stdout carries the protocol only; whatever else prints goes to the log
        PrintStream protocol = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        PrintStream log =
                new PrintStream(
                        Files.newOutputStream(workDir.resolve("harness.log")),
                        true,
                        StandardCharsets.UTF_8);
        System.setOut(log);
        System.setErr(log);
        System.setProperty("harness.log.dir", workDir.toString());
        startWatchdog(maxSeconds);

        Harness harness;
        try {
            harness = new Harness(format, workDir);
        } catch (Throwable t) {
            t.printStackTrace(log);
            ObjectNode m = JSON.createObjectNode();
            m.put("ready", false);
            m.put("error", Commands.describe(t));
            protocol.println(JSON.writeValueAsString(m));
            Runtime.getRuntime().halt(1);
            return;
        }
        protocol.println(JSON.writeValueAsString(harness.readyMessage()));

        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode command = JSON.readTree(line);
            log.println("== command " + line);
            long start = System.nanoTime();
            ObjectNode reply = harness.commands.run(command);
            long millis = (System.nanoTime() - start) / 1_000_000;
            reply.put("millis", millis);
            log.println("== done in " + millis + " ms");
            protocol.println(JSON.writeValueAsString(reply));
            if ("shutdown".equals(command.path("cmd").asText())) {
                break;
            }
        }
        // stdin closed (the parent is gone) or shutdown: stop everything, then exit
        harness.close(log);
        Runtime.getRuntime().halt(0);
    }

    private void close(PrintStream log) {
        try {
            commands.close();
        } catch (Throwable t) {
            t.printStackTrace(log);
        }
        try {
            flink.close();
        } catch (Throwable t) {
            t.printStackTrace(log);
        }
        try {
            cluster.close();
        } catch (Throwable t) {
            t.printStackTrace(log);
        }
    }

    /** Ends the process after {@code maxSeconds}, whatever it is doing. */
    private static void startWatchdog(long maxSeconds) {
        Thread t =
                new Thread(
                        () -> {
                            try {
                                Thread.sleep(maxSeconds * 1000L);
                            } catch (InterruptedException e) {
                                return;
                            }
                            System.err.println("harness: --max-seconds reached, exiting");
                            Runtime.getRuntime().halt(3);
                        },
                        "harness-watchdog");
        t.setDaemon(true);
        t.start();
    }

}
