// lockbench's Apache Curator driver: the same workloads as zkr_lockbench, with Curator 5.4's
// recipes, on the same server. Prints one JSON object.
//   java -cp ... CuratorBench CONNECT WORKLOAD CLIENTS SECONDS
// Workloads: w1/w2/w3/w6 InterProcessMutex, w4 InterProcessSemaphoreV2 (3 leases),
// w5 InterProcessSemaphoreMutex, w8 InterProcessReadWriteLock (every tenth cycle of a client
// writes, the clients starting at different points of the ten), w9 LeaderLatch failover (a clean
// close -> the next participant's isLeader, 2 sessions), w10 LeaderLatch failover after SIGKILL
// (a leader in a child JVM with a 2 s session is killed -> the next participant's isLeader; one
// kill per second of SECONDS, at least 2). Each client is its own CuratorFramework (its own
// session).
import java.io.*;
import java.net.Socket;
import java.util.*;
import java.util.concurrent.atomic.*;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.*;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorBench {
    interface Cycle { void acquire() throws Exception; void release() throws Exception; }

    static final AtomicInteger nextOffset = new AtomicInteger();

    static Cycle recipe(String workload, CuratorFramework c, String path) {
        switch (workload) {
            case "w8": {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
                int[] cycle = {nextOffset.getAndIncrement()};
                InterProcessMutex[] held = new InterProcessMutex[1];
                return new Cycle() {
                    public void acquire() throws Exception {
                        held[0] = ++cycle[0] % 10 == 0 ? rw.writeLock() : rw.readLock();
                        held[0].acquire();
                    }
                    public void release() throws Exception { held[0].release(); }
                };
            }
            case "w4": {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, path, 3);
                Lease[] held = new Lease[1];
                return new Cycle() {
                    public void acquire() throws Exception { held[0] = s.acquire(); }
                    public void release() throws Exception { s.returnLease(held[0]); }
                };
            }
            case "w5": {
                InterProcessSemaphoreMutex m = new InterProcessSemaphoreMutex(c, path);
                return new Cycle() {
                    public void acquire() throws Exception { m.acquire(); }
                    public void release() throws Exception { m.release(); }
                };
            }
            default: {
                InterProcessMutex m = new InterProcessMutex(c, path);
                return new Cycle() {
                    public void acquire() throws Exception { m.acquire(); }
                    public void release() throws Exception { m.release(); }
                };
            }
        }
    }

    // Requests the server has received so far (the four-letter "srvr" command).
    static long serverReceived(String connect) {
        String[] hp = connect.split(",")[0].split(":");
        try (Socket s = new Socket(hp[0], Integer.parseInt(hp[1]))) {
            s.getOutputStream().write("srvr".getBytes());
            BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream()));
            for (String line; (line = in.readLine()) != null;)
                if (line.startsWith("Received: ")) return Long.parseLong(line.substring(10).trim());
        } catch (IOException e) {
            return -1;
        }
        return -1;
    }

    static double pct(List<Double> v, double p) {
        if (v.isEmpty()) return 0;
        Collections.sort(v);
        return v.get((int) (p * (v.size() - 1)));
    }

    // W9: as zkr_lockbench's run_failover.
    static final Object ledLock = new Object();
    static long ledAt = 0;

    static LeaderLatch join(CuratorFramework c, String path, String id) throws Exception {
        LeaderLatch l = new LeaderLatch(c, path, id);
        l.addListener(new LeaderLatchListener() {
            public void isLeader() { synchronized (ledLock) { ledAt = System.nanoTime(); ledLock.notifyAll(); } }
            public void notLeader() {}
        });
        l.start();
        return l;
    }

    static long awaitLed(long after) throws Exception {
        synchronized (ledLock) {
            long until = System.nanoTime() + 30_000_000_000L;
            while (ledAt <= after) {
                long left = (until - System.nanoTime()) / 1_000_000;
                if (left <= 0) throw new RuntimeException("no new leader within 30 s");
                ledLock.wait(left);
            }
            return ledAt;
        }
    }

    static void failover(String connect, String path, double seconds, double warmup) throws Exception {
        CuratorFramework[] s = new CuratorFramework[2];
        for (int i = 0; i < 2; i++) s[i] = session(connect, 10000);
        LeaderLatch[] latch = new LeaderLatch[2];
        latch[0] = join(s[0], path, "p0");
        awaitLed(0);
        latch[1] = join(s[1], path, "p1");
        int leader = 0;
        List<Double> times = new ArrayList<>();
        long received0 = 0, cpu0 = 0, start = 0;
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        for (int phase = 0; phase < 2; phase++) {
            if (phase == 1) { received0 = serverReceived(connect); cpu0 = os.getProcessCpuTime(); start = System.nanoTime(); }
            long until = System.nanoTime() + (long) ((phase == 0 ? warmup : seconds) * 1e9);
            while (System.nanoTime() < until) {
                int next = 1 - leader;
                while (s[leader].getChildren().forPath(path).size() < 2) Thread.sleep(1);
                long t0 = System.nanoTime();
                latch[leader].close();
                long t1 = awaitLed(t0);
                if (phase == 1) times.add((t1 - t0) / 1000.0);
                latch[leader] = join(s[leader], path, "p" + leader);
                leader = next;
            }
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        long received = serverReceived(connect) - received0;
        long cpu1 = os.getProcessCpuTime();
        int n = times.size();
        System.out.printf(Locale.ROOT,
            "{\"program\": \"curator\", \"workload\": \"w9\", \"clients\": 2, \"seconds\": %.3f, \"cycles\": %d, \"rate\": %.1f, "
                + "\"acquire_p50_us\": %.1f, \"acquire_p99_us\": %.1f, \"handoff_p50_us\": %.1f, \"handoff_p99_us\": %.1f, "
                + "\"server_requests_per_cycle\": %.2f, \"cpu_ms_per_1000_cycles\": %.1f, \"min_per_client\": %d, \"max_per_client\": %d}%n",
            elapsed, n, n / elapsed, pct(new ArrayList<>(times), 0.5), pct(new ArrayList<>(times), 0.99),
            pct(new ArrayList<>(times), 0.5), pct(new ArrayList<>(times), 0.99),
            n > 0 ? (double) received / n : 0, n > 0 ? (cpu1 - cpu0) / 1e6 / n * 1000 : 0, n / 2, n - n / 2);
        for (CuratorFramework c : s) c.close();
        System.exit(0);
    }

    // W10: as zkr_lockbench's run_failover_after_kill. The session timeout is zkr's (2 s).
    static final int KILL_SESSION_MS = 2000;

    // One client (its own session), connected.
    static CuratorFramework session(String connect, int sessionMs) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, sessionMs, 15000, new ExponentialBackoffRetry(1000, 3));
        c.start();
        c.blockUntilConnected();
        return c;
    }

    static void leadUntilKilled(String connect, String path) throws Exception {
        LeaderLatch l = new LeaderLatch(session(connect, KILL_SESSION_MS), path, "killed");
        l.start();
        Thread.sleep(Long.MAX_VALUE);
    }

    static void failoverAfterKill(String connect, String path, double seconds) throws Exception {
        CuratorFramework c = session(connect, KILL_SESSION_MS);
        int kills = Math.max(2, (int) seconds);
        List<Double> times = new ArrayList<>();
        long start = System.nanoTime();
        for (int i = 0; i < kills; i++) {
            Process leader = new ProcessBuilder("java", "-cp", System.getProperty("java.class.path"), "CuratorBench", connect,
                                                "w10-leader", path).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                                 .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            long until = System.nanoTime() + 30_000_000_000L;
            while (true) {  // the child is queued (its latch leads the moment it is alone)
                List<String> kids = c.checkExists().forPath(path) == null ? List.of() : c.getChildren().forPath(path);
                if (kids.size() == 1) break;
                if (System.nanoTime() > until) throw new RuntimeException("the w10 leader never joined " + path);
                Thread.sleep(1);
            }
            synchronized (ledLock) { ledAt = 0; }
            LeaderLatch latch = join(c, path, "survivor");
            while (c.getChildren().forPath(path).size() < 2) Thread.sleep(1);
            Thread.sleep(java.util.concurrent.ThreadLocalRandom.current().nextInt(1000));  // as zkr_lockbench's kill_delay_ms
            long t0 = System.nanoTime();
            leader.destroyForcibly();  // SIGKILL
            long t1 = awaitLed(t0);
            times.add((t1 - t0) / 1000.0);
            leader.waitFor();
            latch.close();
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        int n = times.size();
        System.out.printf(Locale.ROOT,
            "{\"program\": \"curator\", \"workload\": \"w10\", \"clients\": 2, \"seconds\": %.3f, \"cycles\": %d, \"rate\": %.3f, "
                + "\"acquire_p50_us\": %.1f, \"acquire_p99_us\": %.1f, \"handoff_p50_us\": %.1f, \"handoff_p99_us\": %.1f, "
                + "\"min_per_client\": %d, \"max_per_client\": %d}%n",
            elapsed, n, n / elapsed, pct(new ArrayList<>(times), 0.5), pct(new ArrayList<>(times), 0.99),
            pct(new ArrayList<>(times), 0.5), pct(new ArrayList<>(times), 0.99), n, n);
        c.close();
        System.exit(0);
    }

    // W0: as zkr_lockbench's run_plain_ops: sequential getData of one node for half the time,
    // then create (ephemeral) + delete of one node for the other half, through Curator's sync calls.
    interface Op { void run() throws Exception; }

    static long[] loop(Op op, double seconds, List<Double> lat) throws Exception {
        long n = 0, start = System.nanoTime(), until = start + (long) (seconds * 1e9);
        for (; System.nanoTime() < until; n++) {
            long t0 = System.nanoTime();
            op.run();
            if (lat != null) lat.add((System.nanoTime() - t0) / 1000.0);
        }
        return new long[] {n, System.nanoTime() - start};
    }

    static void plainOps(String connect, String path, double seconds, double warmup) throws Exception {
        CuratorFramework c = session(connect, 10000);
        c.create().creatingParentsIfNeeded().forPath(path, "x".getBytes());
        String node = path + "/n";
        Op read = () -> c.getData().forPath(path);
        Op cycle = () -> { c.create().withMode(org.apache.zookeeper.CreateMode.EPHEMERAL).forPath(node); c.delete().forPath(node); };
        loop(read, warmup / 2, null);
        loop(cycle, warmup / 2, null);
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        long received0 = serverReceived(connect), cpu0 = os.getProcessCpuTime();
        List<Double> reads = new ArrayList<>(), cycles = new ArrayList<>();
        long[] r = loop(read, seconds / 2, reads);
        long cpu1 = os.getProcessCpuTime(), received = serverReceived(connect) - received0;
        long[] cy = loop(cycle, seconds / 2, cycles);
        double secs = r[1] / 1e9;
        System.out.printf(Locale.ROOT,
            "{\"program\": \"curator\", \"workload\": \"w0\", \"clients\": 1, \"seconds\": %.3f, \"cycles\": %d, \"rate\": %.1f, "
                + "\"acquire_p50_us\": %.1f, \"acquire_p99_us\": %.1f, \"handoff_p50_us\": 0, \"handoff_p99_us\": 0, "
                + "\"server_requests_per_cycle\": %.2f, \"cpu_ms_per_1000_cycles\": %.1f, \"min_per_client\": %d, \"max_per_client\": %d, "
                + "\"create_delete_per_s\": %.1f, \"create_delete_p50_us\": %.1f}%n",
            secs, r[0], r[0] / secs, pct(new ArrayList<>(reads), 0.5), pct(new ArrayList<>(reads), 0.99),
            r[0] > 0 ? (double) received / r[0] : 0, r[0] > 0 ? (cpu1 - cpu0) / 1e6 / r[0] * 1000 : 0, r[0], r[0],
            cy[0] / (cy[1] / 1e9), pct(cycles, 0.5));
        c.close();
        System.exit(0);
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], workload = args[1];
        if (workload.equals("w0")) {
            plainOps(connect, "/lockbench-curator/w0-" + ProcessHandle.current().pid(), Double.parseDouble(args[3]),
                     args.length > 4 ? Double.parseDouble(args[4]) : 2.0);
            return;
        }
        if (workload.equals("w10-leader")) {  // W10's child: its election's path is args[2]
            leadUntilKilled(connect, args[2]);
            return;
        }
        if (workload.equals("w10")) {
            failoverAfterKill(connect, "/lockbench-curator/w10-" + ProcessHandle.current().pid(), Double.parseDouble(args[3]));
            return;
        }
        if (workload.equals("w9")) {
            failover(connect, "/lockbench-curator/w9-" + ProcessHandle.current().pid(), Double.parseDouble(args[3]),
                     args.length > 4 ? Double.parseDouble(args[4]) : 2.0);
            return;
        }
        int clients = Integer.parseInt(args[2]);
        double seconds = Double.parseDouble(args[3]);
        double warmup = args.length > 4 ? Double.parseDouble(args[4]) : 2.0;
        String path = "/lockbench-curator/" + workload + "-" + ProcessHandle.current().pid();
        List<CuratorFramework> sessions = new ArrayList<>();
        for (int i = 0; i < clients; i++) sessions.add(session(connect, 10000));
        // Warm-up: the JIT (Curator's figures halve without it), and the parents.
        Cycle w = recipe(workload, sessions.get(0), path);
        for (long until = System.nanoTime() + (long) (warmup * 1e9); System.nanoTime() < until;) { w.acquire(); w.release(); }
        AtomicLong releaseStarted = new AtomicLong(0);
        AtomicBoolean stop = new AtomicBoolean(false);
        List<Double> acquire = Collections.synchronizedList(new ArrayList<>());
        List<Double> handoff = Collections.synchronizedList(new ArrayList<>());
        long[] perClient = new long[clients];
        List<Thread> threads = new ArrayList<>();
        long received0 = serverReceived(connect);
        long cpu0 = java.lang.management.ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean
            ? ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() : 0;
        long start = System.nanoTime();
        for (int i = 0; i < clients; i++) {
            final int me = i;
            Cycle r = recipe(workload, sessions.get(i), path);
            Thread t = new Thread(() -> {
                List<Double> acq = new ArrayList<>(), hand = new ArrayList<>();
                try {
                    while (!stop.get()) {
                        long t0 = System.nanoTime();
                        r.acquire();
                        long t1 = System.nanoTime();
                        acq.add((t1 - t0) / 1000.0);
                        long rel = releaseStarted.get();
                        if (clients > 1 && rel > t0) hand.add((t1 - rel) / 1000.0);
                        releaseStarted.set(System.nanoTime());
                        r.release();
                        perClient[me]++;
                    }
                } catch (Exception e) {
                    e.printStackTrace();
                    System.exit(1);
                }
                acquire.addAll(acq);
                handoff.addAll(hand);
            });
            threads.add(t);
            t.start();
        }
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        for (Thread t : threads) t.join();
        double elapsed = (System.nanoTime() - start) / 1e9;
        long cpu1 = ((com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
        long received = serverReceived(connect) - received0;
        long cycles = acquire.size();
        long min = Long.MAX_VALUE, max = 0;
        for (long n : perClient) { min = Math.min(min, n); max = Math.max(max, n); }
        System.out.printf(Locale.ROOT,
            "{\"program\": \"curator\", \"workload\": \"%s\", \"clients\": %d, \"seconds\": %.3f, \"cycles\": %d, \"rate\": %.1f, "
                + "\"acquire_p50_us\": %.1f, \"acquire_p99_us\": %.1f, \"handoff_p50_us\": %.1f, \"handoff_p99_us\": %.1f, "
                + "\"server_requests_per_cycle\": %.2f, \"cpu_ms_per_1000_cycles\": %.1f, \"min_per_client\": %d, \"max_per_client\": %d}%n",
            workload, clients, elapsed, cycles, cycles / elapsed, pct(new ArrayList<>(acquire), 0.5), pct(new ArrayList<>(acquire), 0.99),
            pct(new ArrayList<>(handoff), 0.5), pct(new ArrayList<>(handoff), 0.99),
            cycles > 0 ? (double) received / cycles : 0, cycles > 0 ? (cpu1 - cpu0) / 1e6 / cycles * 1000 : 0, min, max);
        for (CuratorFramework c : sessions) c.close();
        System.exit(0);
    }
}
