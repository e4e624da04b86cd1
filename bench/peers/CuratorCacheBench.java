// zkr_cachebench's Apache Curator driver: the same figures with Curator 5.4's TreeCache or
// CuratorCache, on a tree zkr_cachebench made (/cachebench, which must exist). Prints one JSON
// object: the bootstrap (start until initialized), the process's resident memory and the JVM heap
// in use (after a full GC) per cached node, and the latency of one change (a setData on another
// session until the listener runs), CHANGES times, one at a time.
//   java -cp ... CuratorCacheBench CONNECT treecache|curatorcache CHANGES
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.cache.TreeCacheEvent;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorCacheBench {
    static long rssBytes() throws Exception {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status")))
            if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        return 0;
    }

    static long heapBytes() throws Exception {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    // Every path under root (the tree as the server has it), parents first.
    static void paths(CuratorFramework c, String path, List<String> out) throws Exception {
        out.add(path);
        for (String child : c.getChildren().forPath(path)) paths(c, path + "/" + child, out);
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], kind = args[1], root = "/cachebench";
        int changes = Integer.parseInt(args[2]);
        CuratorFramework reader = CuratorFrameworkFactory.newClient(connect, 10000, 15000, new ExponentialBackoffRetry(100, 5));
        CuratorFramework writer = CuratorFrameworkFactory.newClient(connect, 10000, 15000, new ExponentialBackoffRetry(100, 5));
        reader.start();
        writer.start();
        reader.blockUntilConnected();
        writer.blockUntilConnected();
        List<String> all = new ArrayList<>();
        paths(writer, root, all);

        AtomicReference<String> awaited = new AtomicReference<>("");
        AtomicLong heardAt = new AtomicLong();
        AtomicReference<CountDownLatch> heardLatch = new AtomicReference<>(new CountDownLatch(0));
        AtomicInteger shown = new AtomicInteger();
        CountDownLatch initialized = new CountDownLatch(1);
        long rssBefore = rssBytes(), heapBefore = heapBytes();
        long t0 = System.nanoTime();
        AutoCloseable cache;
        if (kind.equals("treecache")) {
            TreeCache tc = TreeCache.newBuilder(reader, root).build();
            tc.getListenable().addListener((client, e) -> {
                if (e.getType() == TreeCacheEvent.Type.INITIALIZED) initialized.countDown();
                if (e.getType() == TreeCacheEvent.Type.NODE_ADDED) shown.incrementAndGet();
                if (e.getType() == TreeCacheEvent.Type.NODE_UPDATED && e.getData().getPath().equals(awaited.get())
                    && heardAt.compareAndSet(0, System.nanoTime())) heardLatch.get().countDown();
            });
            tc.start();
            cache = tc;
        } else {
            CuratorCache cc = CuratorCache.build(reader, root);
            cc.listenable().addListener(CuratorCacheListener.builder()
                .forInitialized(initialized::countDown)
                .forCreates(d -> shown.incrementAndGet())
                .forChanges((before, after) -> {
                    if (after.getPath().equals(awaited.get()) && heardAt.compareAndSet(0, System.nanoTime())) heardLatch.get().countDown();
                })
                .build());
            cc.start();
            cache = cc;
        }
        if (!initialized.await(120, TimeUnit.SECONDS)) {
            System.err.println("not initialized");
            System.exit(4);
        }
        double bootstrapMs = (System.nanoTime() - t0) / 1e6;
        long rssAfter = rssBytes(), heapAfter = heapBytes();

        List<Double> latencies = new ArrayList<>();
        for (int i = 0; i < changes; i++) {
            String path = all.get((int) ((long) i * 7919 % all.size()));
            CountDownLatch heard = new CountDownLatch(1);
            heardLatch.set(heard);
            heardAt.set(0);
            awaited.set(path);
            long sent = System.nanoTime();
            writer.setData().forPath(path, Integer.toString(i).getBytes());
            if (!heard.await(5, TimeUnit.SECONDS)) {
                System.err.println("a change never came");
                System.exit(5);
            }
            latencies.add((heardAt.get() - sent) / 1e3);
        }
        Collections.sort(latencies);
        cache.close();
        reader.close();
        writer.close();
        int n = Math.max(shown.get(), 1);
        System.out.printf("{\"nodes\":%d,\"shown\":%d,\"bootstrap_ms\":%.1f,\"nodes_per_s\":%.0f,\"rss_bytes_per_node\":%.0f,"
                + "\"heap_bytes_per_node\":%.0f,\"change_latency_us\":{\"p50\":%.0f,\"p90\":%.0f,\"p99\":%.0f}}%n",
            all.size(), shown.get(), bootstrapMs, shown.get() / (bootstrapMs / 1000.0), (double) (rssAfter - rssBefore) / n,
            (double) (heapAfter - heapBefore) / n, pct(latencies, 0.5), pct(latencies, 0.9), pct(latencies, 0.99));
    }

    static double pct(List<Double> v, double p) {
        return v.get((int) (p * (v.size() - 1)));
    }
}
