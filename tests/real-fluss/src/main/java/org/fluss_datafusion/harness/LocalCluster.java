package org.fluss_datafusion.harness;

import org.apache.curator.test.TestingServer;
import org.apache.fluss.client.Connection;
import org.apache.fluss.client.ConnectionFactory;
import org.apache.fluss.client.admin.Admin;
import org.apache.fluss.config.ConfigOptions;
import org.apache.fluss.config.Configuration;
import org.apache.fluss.server.coordinator.CoordinatorServer;
import org.apache.fluss.server.tablet.TabletServer;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;

/**
 * A Fluss cluster in this process: ZooKeeper (Curator's TestingServer), one coordinator and
 * tablet servers, each with its own data directory under the work dir, on fixed loopback ports
 * (so a restarted server comes back at the address clients know).
 *
 * <p>Upstream's {@code FlussClusterExtension} does the same, but its test-jar registers a
 * {@code TestingPaimonStoragePlugin} for the {@code paimon} format (its
 * META-INF/services), which then shadows the real lake plugin on the class path: Flink's union
 * read fails with "cannot be used as historical data". The servers here are the same classes
 * ({@code CoordinatorServer}, {@code TabletServer}) the distribution's scripts start.
 */
final class LocalCluster implements AutoCloseable {
    private final Configuration base;
    private final Path dir;
    private int zkPort = freePort();
    private int coordinatorPort = freePort();
    private final Map<Integer, Integer> tabletPorts = new TreeMap<>();
    private final Map<Integer, TabletServer> tablets = new TreeMap<>();
    private TestingServer zk;
    private CoordinatorServer coordinator;

    LocalCluster(Configuration base, Path dir, int tabletServers) throws IOException {
        this.base = base;
        this.dir = dir;
        for (int id = 0; id < tabletServers; id++) {
            tabletPorts.put(id, freePort());
        }
    }

    void start() throws Exception {
        Files.createDirectories(dir);
        for (int attempt = 0; ; attempt++) {
            try {
                zk = new TestingServer(zkPort, dir.resolve("zookeeper").toFile(), true);
                break;
            } catch (Exception e) {
                if (attempt >= 2 || !portTaken(e)) {
                    throw e;
                }
                zkPort = freePort();
            }
        }
        for (int attempt = 0; ; attempt++) {
            try {
                startCoordinator();
                break;
            } catch (Exception e) {
                try {
                    stopCoordinator();
                } catch (Exception closing) {
                    e.addSuppressed(closing);
                }
                if (attempt >= 2 || !portTaken(e)) {
                    throw e;
                }
                coordinatorPort = freePort();
            }
        }
        for (int id : tabletPorts.keySet()) {
            for (int attempt = 0; ; attempt++) {
                try {
                    startTabletServer(id);
                    break;
                } catch (Exception e) {
                    if (attempt >= 2 || !portTaken(e)) {
                        throw e;
                    }
                    tabletPorts.put(id, freePort());
                }
            }
        }
        waitForServers(1 + tabletPorts.size());
    }

    /**
     * Whether a server failed to start because its port was taken. Only the first start may
     * move to another port: nothing knows the addresses yet (a restart must keep its port).
     */
    private static boolean portTaken(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.net.BindException
                    || String.valueOf(t.getMessage()).contains("Address already in use")) {
                return true;
            }
        }
        return false;
    }

    String bootstrapServers() {
        return "127.0.0.1:" + coordinatorPort;
    }

    String remoteDataDir() {
        return "file://" + dir.resolve("remote-data");
    }

    Path tabletServerDataDir(int id) {
        return dir.resolve("tablet-server-" + id);
    }

    Configuration clientConfig() {
        Configuration conf = new Configuration();
        conf.set(ConfigOptions.BOOTSTRAP_SERVERS, Collections.singletonList(bootstrapServers()));
        return conf;
    }

    private Configuration serverConf() {
        Configuration conf = new Configuration(base);
        conf.setString(ConfigOptions.ZOOKEEPER_ADDRESS, "127.0.0.1:" + zkPort);
        conf.set(ConfigOptions.REMOTE_DATA_DIR, remoteDataDir());
        return conf;
    }

    void startCoordinator() throws Exception {
        Configuration conf = serverConf();
        conf.setString(ConfigOptions.BIND_LISTENERS, "FLUSS://127.0.0.1:" + coordinatorPort);
        coordinator = new CoordinatorServer(conf);
        coordinator.start();
    }

    void stopCoordinator() throws Exception {
        if (coordinator != null) {
            coordinator.close();
            coordinator = null;
        }
    }

    void startTabletServer(int id) throws Exception {
        Integer port = tabletPorts.get(id);
        if (port == null) {
            throw new IllegalArgumentException("no tablet server " + id);
        }
        if (tablets.containsKey(id)) {
            throw new IllegalStateException("tablet server " + id + " is running");
        }
        Configuration conf = serverConf();
        conf.set(ConfigOptions.TABLET_SERVER_ID, id);
        conf.setString(ConfigOptions.BIND_LISTENERS, "FLUSS://127.0.0.1:" + port);
        conf.setString(ConfigOptions.DATA_DIR, tabletServerDataDir(id).toString());
        TabletServer server = new TabletServer(conf);
        try {
            server.start();
        } catch (Exception e) {
            try {
                server.close();
            } catch (Exception closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        tablets.put(id, server);
    }

    void stopTabletServer(int id) throws Exception {
        TabletServer server = tablets.remove(id);
        if (server == null) {
            throw new IllegalArgumentException("tablet server " + id + " is not running");
        }
        server.close();
    }

    /** Waits until the coordinator lists {@code count} servers (itself included). */
    void waitForServers(int count) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        Exception last = null;
        while (System.nanoTime() < deadline) {
            try (Connection c = ConnectionFactory.createConnection(clientConfig());
                    Admin admin = c.getAdmin()) {
                if (admin.getServerNodes().get().size() >= count) {
                    return;
                }
            } catch (Exception e) {
                last = e;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the cluster did not come up with " + count + " servers", last);
    }

    /**
     * The coordinator's tiering state of a table ({@code LakeTableTieringManager}'s {@code
     * tieringStates}: Scheduled, Pending, Tiering, ...), or {@code "freshness <ms>"} while
     * the table's freshness is not yet {@code freshnessMs}. Read by reflection under the
     * manager's own lock: the manager has no accessor, and this harness runs the coordinator
     * in its own process (upstream's tests reach the same state through
     * {@code @VisibleForTesting} members).
     */
    String tieringState(long tableId, long freshnessMs) throws Exception {
        if (coordinator == null) {
            return "no coordinator";
        }
        Object manager = field(coordinator, "lakeTableTieringManager");
        java.util.concurrent.locks.Lock lock =
                (java.util.concurrent.locks.Lock) field(manager, "lock");
        lock.lock();
        try {
            Object freshness = ((Map<?, ?>) field(manager, "tableLakeFreshness")).get(tableId);
            if (freshness == null || (Long) freshness != freshnessMs) {
                return "freshness " + freshness;
            }
            Object state = ((Map<?, ?>) field(manager, "tieringStates")).get(tableId);
            return String.valueOf(state);
        } finally {
            lock.unlock();
        }
    }

    private static Object field(Object target, String name) throws ReflectiveOperationException {
        java.lang.reflect.Field f = target.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(target);
    }

    /**
     * Whether the coordinator's own context holds every one of these tables and partitions.
     * Asked on the coordinator's event thread ({@code AccessContextEvent}, which upstream's
     * tests use the same way), since that context is not safe to read from another thread.
     */
    boolean coordinatorKnows(java.util.Set<Long> tableIds, java.util.Set<Long> partitionIds)
            throws Exception {
        if (coordinator == null) {
            return false;
        }
        org.apache.fluss.server.coordinator.event.AccessContextEvent<Boolean> ask =
                new org.apache.fluss.server.coordinator.event.AccessContextEvent<>(
                        context ->
                                tableIds.stream().allMatch(context::containsTableId)
                                        && partitionIds.stream()
                                                .allMatch(context::containsPartitionId));
        coordinator.getCoordinatorEventProcessor().getCoordinatorEventManager().put(ask);
        return ask.getResultFuture().get(60, java.util.concurrent.TimeUnit.SECONDS);
    }

    int runningTabletServers() {
        return tablets.size();
    }

    @Override
    public void close() throws Exception {
        if (zkClient != null) {
            zkClient.close();
            zkClient = null;
        }
        for (TabletServer t : tablets.values()) {
            t.close();
        }
        tablets.clear();
        stopCoordinator();
        if (zk != null) {
            zk.close();
            zk = null;
        }
    }

    /** The data of a znode (null if it has none). */
    byte[] zkData(String path) throws Exception {
        return curator().getData().forPath(path);
    }

    /** The children of a znode. */
    java.util.List<String> zkChildren(String path) throws Exception {
        return curator().getChildren().forPath(path);
    }

    private org.apache.curator.framework.CuratorFramework zkClient;

    /** One ZooKeeper client for the harness's own reads, made on first use. */
    private org.apache.curator.framework.CuratorFramework curator() throws InterruptedException {
        if (zkClient == null) {
            zkClient =
                    org.apache.curator.framework.CuratorFrameworkFactory.newClient(
                            "127.0.0.1:" + zkPort, new org.apache.curator.retry.RetryNTimes(3, 200));
            zkClient.start();
            zkClient.blockUntilConnected();
        }
        return zkClient;
    }

    /**
     * A free loopback port below the kernel's ephemeral range. A port the kernel hands out for
     * {@code bind(0)} comes from that range, which is also where every outgoing connection
     * (ZooKeeper clients, the servers' RPC clients, the Rust tests) takes its source port: a
     * port picked there and bound a moment later can be taken in between (CI saw "Address
     * already in use" for a tablet server). Below the range, only another listener can take it,
     * and the restart of a server needs its port again, so this matters twice.
     */
    private static synchronized int freePort() throws IOException {
        int[] ephemeral = ephemeralRange();
        int low = 10000;
        int high = Math.max(low + 1000, ephemeral[0]);
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        IOException last = null;
        for (int attempt = 0; attempt < 200; attempt++) {
            int port = random.nextInt(low, high);
            if (port >= ephemeral[0] && port <= ephemeral[1] || !PICKED.add(port)) {
                continue;
            }
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(true);
                s.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port));
                return port;
            } catch (IOException e) {
                last = e;
            }
        }
        throw new IOException("no free loopback port below the ephemeral range", last);
    }

    /** Ports this process has handed out, so two servers never get the same one. */
    private static final java.util.Set<Integer> PICKED = new java.util.HashSet<>();

    /** The kernel's ephemeral port range ({@code ip_local_port_range}), or Linux's default. */
    private static int[] ephemeralRange() {
        try {
            String[] parts =
                    Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))
                            .trim()
                            .split("\\s+");
            return new int[] {Integer.parseInt(parts[0]), Integer.parseInt(parts[1])};
        } catch (IOException | RuntimeException e) {
            return new int[] {32768, 60999};
        }
    }
}
