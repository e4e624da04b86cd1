// A Curator 5.4 process contending with zkr's on one path, for the interop tests: the same log
// lines as zkr_lock_worker ("ACQ|REL <pid> 0 1" for a mutex, and for a LeaderLatch once it leads
// (ITERATIONS ignored), and for a LeaderSelector's one term (takeLeadership, then it leaves); "RACQ|WACQ|RREL|WREL <pid> 0" for a read-write lock), appended with one write each (O_APPEND), so the file order is a real-time order.
// revocable: holds a revocable InterProcessMutex until asked to let go (at most 30 s), logging
// "ACQ <pid> 0 1" and then "REVOKED <pid>"; revoke: waits for a lock node under PATH and asks its
// holder to let go with Curator's Revoker; semaphore:MAX: an InterProcessSemaphoreV2 of MAX leases,
// one lease at a time ("ACQ|REL <pid> 0 1"). Curator has no fencing token: it logs 0.
// treecache, curatorcache: a TreeCache or a CuratorCache on PATH (ITERATIONS and HOLD_MS unused)
// that, every 50 ms when its view changed, writes the view to LOG (a temporary file renamed over
// it): a first line "initialized" or "loading", then "PATH<TAB>VERSION<TAB>CZXID<TAB>DATA" per node
// shown, sorted by path; until it is killed.
// groupmember: a GroupMember of the group PATH with the id ID and the data "curator:ID" that,
// every 50 ms when its view changed, writes the members it sees to LOG as above ("initialized",
// then "ID<TAB>DATA" per member, sorted); on SIGTERM it leaves the group and closes its session.
// barrier-wait: a DistributedBarrier on PATH: logs "WAITING <pid>", waits on the barrier (untimed),
// logs "PASSED <pid>" and ends. barrier-set: sets the barrier, logs "SET <pid>", sleeps HOLD_MS,
// logs "REMOVING <pid>", removes it and ends.
// doublebarrier:N: a DistributedDoubleBarrier of N members on PATH: logs "ENTERING <pid>", enters
// (untimed), logs "ENTERED <pid>", sleeps HOLD_MS, logs "LEAVING <pid>", leaves, logs "LEFT <pid>".
// sharedcount: a SharedCount on PATH (seed 0), incremented ITERATIONS times by the compare-and-set
// loop Curator's users write (getVersionedValue, trySetCount); then logs "DONE <pid> <its view>".
// sharedvalue: a SharedValue on PATH (seed empty) to which it appends "c" ITERATIONS times by the
// compare-and-set loop Curator's users write (getVersionedValue, trySetValue); then logs "DONE <pid>
// <its view's length>".
// atomiclong (atomicint: a DistributedAtomicInteger, likewise): a DistributedAtomicLong on PATH (10 optimistic tries, then PromotedToLock on
// PATH-lock), incremented until ITERATIONS increments succeeded; then logs "DONE <pid> <tries>
// <ms of the increments>".
//   java -cp CLASSES:/usr/share/java/curator-recipes.jar CuratorWorker CONNECT mutex|latch|selector|revocable|revoke|rw:PCT|semaphore:MAX|treecache|curatorcache|groupmember|barrier-wait|barrier-set|doublebarrier:N|sharedcount|sharedvalue|atomiclong|atomicint PATH ITERATIONS HOLD_MS LOG [ID]
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicInteger;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicNumber;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.cache.TreeCache;
import org.apache.curator.framework.recipes.cache.TreeCacheEvent;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.shared.SharedValue;
import org.apache.curator.framework.recipes.shared.VersionedValue;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;

public class CuratorWorker {
    static void line(FileOutputStream out, String s) throws IOException {
        out.write((s + "\n").getBytes(StandardCharsets.US_ASCII));
    }

    static String entry(ChildData d) {
        byte[] data = d.getData() == null ? new byte[0] : d.getData();
        return d.getPath() + "\t" + d.getStat().getVersion() + "\t" + d.getStat().getCzxid() + "\t" + new String(data, StandardCharsets.UTF_8);
    }

    static void walk(TreeCache cache, String path, TreeMap<String, String> view) {
        ChildData d = cache.getCurrentData(path);
        if (d == null) return;
        view.put(path, entry(d));
        Map<String, ChildData> children = cache.getCurrentChildren(path);
        if (children == null) return;
        for (String name : children.keySet()) walk(cache, path + "/" + name, view);
    }

    // Writes the cache's view whenever it changed, until killed.
    static void writeViews(Supplier<TreeMap<String, String>> view, AtomicBoolean initialized, String file) throws Exception {
        Path target = Paths.get(file), temporary = Paths.get(file + ".tmp");
        String last = null;
        for (;;) {
            StringBuilder text = new StringBuilder(initialized.get() ? "initialized\n" : "loading\n");
            for (String line : view.get().values()) text.append(line).append('\n');
            if (!text.toString().equals(last)) {
                last = text.toString();
                Files.write(temporary, last.getBytes(StandardCharsets.UTF_8));
                Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            }
            Thread.sleep(50);
        }
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], recipe = args[1], path = args[2];
        int iterations = Integer.parseInt(args[3]), holdMs = Integer.parseInt(args[4]);
        long pid = ProcessHandle.current().pid();
        Random rng = new Random(pid);
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 15000, new ExponentialBackoffRetry(100, 5));
        c.start();
        c.blockUntilConnected();
        if (recipe.equals("treecache")) {
            AtomicBoolean initialized = new AtomicBoolean();
            TreeCache cache = TreeCache.newBuilder(c, path).build();
            cache.getListenable().addListener((client, event) -> {
                if (event.getType() == TreeCacheEvent.Type.INITIALIZED) initialized.set(true);
            });
            cache.start();
            writeViews(() -> {
                TreeMap<String, String> view = new TreeMap<>();
                walk(cache, path, view);
                return view;
            }, initialized, args[5]);
        }
        if (recipe.equals("curatorcache")) {
            AtomicBoolean initialized = new AtomicBoolean();
            CuratorCache cache = CuratorCache.build(c, path);
            cache.listenable().addListener(CuratorCacheListener.builder().forInitialized(() -> initialized.set(true)).build());
            cache.start();
            writeViews(() -> {
                TreeMap<String, String> view = new TreeMap<>();
                cache.stream().forEach(d -> view.put(d.getPath(), entry(d)));
                return view;
            }, initialized, args[5]);
        }
        if (recipe.equals("barrier-wait") || recipe.equals("barrier-set")) {
            DistributedBarrier barrier = new DistributedBarrier(c, path);
            try (FileOutputStream out = new FileOutputStream(args[5], true)) {
                if (recipe.equals("barrier-wait")) {
                    line(out, "WAITING " + pid);
                    barrier.waitOnBarrier();
                    line(out, "PASSED " + pid);
                } else {
                    barrier.setBarrier();
                    line(out, "SET " + pid);
                    Thread.sleep(holdMs);
                    line(out, "REMOVING " + pid);
                    barrier.removeBarrier();
                }
            }
            c.close();
            return;
        }
        if (recipe.startsWith("doublebarrier:")) {
            DistributedDoubleBarrier barrier = new DistributedDoubleBarrier(c, path, Integer.parseInt(recipe.substring(14)));
            try (FileOutputStream out = new FileOutputStream(args[5], true)) {
                line(out, "ENTERING " + pid);
                barrier.enter();
                line(out, "ENTERED " + pid);
                Thread.sleep(holdMs);
                line(out, "LEAVING " + pid);
                barrier.leave();
                line(out, "LEFT " + pid);
            }
            c.close();
            return;
        }
        if (recipe.equals("atomiclong") || recipe.equals("atomicint")) {
            PromotedToLock promotion = PromotedToLock.builder().lockPath(path + "-lock").retryPolicy(new RetryNTimes(10, 1)).build();
            DistributedAtomicNumber<?> value = recipe.equals("atomicint")
                ? new DistributedAtomicInteger(c, path, new RetryNTimes(10, 1), promotion)
                : new DistributedAtomicLong(c, path, new RetryNTimes(10, 1), promotion);
            long tries = 0;
            value.get();  // (connected, before the clock starts)
            long started = System.nanoTime();
            for (int i = 0; i < iterations; ++i) {
                for (;;) {
                    ++tries;
                    AtomicValue<?> r = value.increment();
                    if (r.succeeded()) break;
                }
            }
            try (FileOutputStream out = new FileOutputStream(args[5], true)) {
                line(out, "DONE " + pid + " " + tries + " " + (System.nanoTime() - started) / 1000000);
            }
            c.close();
            return;
        }
        if (recipe.equals("sharedcount")) {
            SharedCount count = new SharedCount(c, path, 0);
            count.start();
            for (int i = 0; i < iterations; ++i) {
                for (;;) {
                    VersionedValue<Integer> seen = count.getVersionedValue();
                    if (count.trySetCount(seen, seen.getValue() + 1)) break;
                    Thread.sleep(1);  // the view catches up through its watch
                }
            }
            try (FileOutputStream out = new FileOutputStream(args[5], true)) {
                line(out, "DONE " + pid + " " + count.getCount());
            }
            count.close();
            c.close();
            return;
        }
        if (recipe.equals("sharedvalue")) {
            SharedValue value = new SharedValue(c, path, new byte[0]);
            value.start();
            for (int i = 0; i < iterations; ++i) {
                for (;;) {
                    VersionedValue<byte[]> seen = value.getVersionedValue();
                    byte[] next = Arrays.copyOf(seen.getValue(), seen.getValue().length + 1);
                    next[next.length - 1] = 'c';
                    if (value.trySetValue(seen, next)) break;
                }
            }
            try (FileOutputStream out = new FileOutputStream(args[5], true)) {
                line(out, "DONE " + pid + " " + value.getValue().length);
            }
            value.close();
            c.close();
            return;
        }
        if (recipe.equals("groupmember")) {
            String id = args[6];
            GroupMember member = new GroupMember(c, path, id, ("curator:" + id).getBytes(StandardCharsets.UTF_8));
            member.start();
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                member.close();
                c.close();
            }));
            writeViews(() -> {
                TreeMap<String, String> view = new TreeMap<>();
                member.getCurrentMembers().forEach((k, v) -> view.put(k, k + "\t" + new String(v, StandardCharsets.UTF_8)));
                return view;
            }, new AtomicBoolean(true), args[5]);
        }
        if (recipe.equals("latch")) {
            try (FileOutputStream out = new FileOutputStream(args[5], true)) {
                LeaderLatch latch = new LeaderLatch(c, path, "curator-" + pid);
                latch.start();
                latch.await();
                line(out, "ACQ " + pid + " 0 1");
                if (holdMs > 0) Thread.sleep(holdMs);
                line(out, "REL " + pid + " 0 1");
                latch.close();
            }
            c.close();
            return;
        }
        if (recipe.equals("revocable")) {
            CountDownLatch asked = new CountDownLatch(1);
            InterProcessMutex m = new InterProcessMutex(c, path);
            m.makeRevocable(lock -> asked.countDown());
            m.acquire();
            try (FileOutputStream out = new FileOutputStream(args[5], true)) {
                line(out, "ACQ " + pid + " 0 1");
                boolean revoked = asked.await(30, TimeUnit.SECONDS);
                if (revoked) line(out, "REVOKED " + pid);
                m.release();
                c.close();
                System.exit(revoked ? 0 : 5);
            }
        }
        if (recipe.equals("revoke")) {
            for (int i = 0; i < 300; i++) {
                List<String> nodes = c.getChildren().forPath(path);
                String holder = null;
                for (String n : nodes)
                    if (n.contains("lock-") && (holder == null || n.substring(n.length() - 10).compareTo(holder.substring(holder.length() - 10)) < 0)) holder = n;
                if (holder != null) {
                    Revoker.attemptRevoke(c, path + "/" + holder);
                    c.close();
                    return;
                }
                Thread.sleep(100);
            }
            c.close();
            System.exit(5);
        }
        if (recipe.equals("selector")) {
            CountDownLatch done = new CountDownLatch(1);
            try (FileOutputStream out = new FileOutputStream(args[5], true)) {
                LeaderSelector selector = new LeaderSelector(c, path, new LeaderSelectorListenerAdapter() {
                    public void takeLeadership(CuratorFramework client) throws Exception {
                        line(out, "ACQ " + pid + " 0 1");
                        if (holdMs > 0) Thread.sleep(holdMs);
                        line(out, "REL " + pid + " 0 1");
                        done.countDown();
                    }
                });
                selector.setId("curator-" + pid);
                selector.start();
                done.await();
                selector.close();
            }
            c.close();
            return;
        }
        if (recipe.startsWith("semaphore:")) {
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(c, path, Integer.parseInt(recipe.substring(10)));
            try (FileOutputStream out = new FileOutputStream(args[5], true)) {
                for (int i = 0; i < iterations; i++) {
                    Lease lease = sem.acquire();
                    line(out, "ACQ " + pid + " 0 1");
                    if (holdMs > 0) Thread.sleep(holdMs);
                    line(out, "REL " + pid + " 0 1");
                    sem.returnLease(lease);
                }
            }
            c.close();
            return;
        }
        int writePct = recipe.startsWith("rw:") ? Integer.parseInt(recipe.substring(3)) : -1;
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, path);
        InterProcessMutex mutex = new InterProcessMutex(c, path);
        try (FileOutputStream out = new FileOutputStream(args[5], true)) {
            for (int i = 0; i < iterations; i++) {
                boolean write = writePct >= 0 && rng.nextInt(100) < writePct;
                InterProcessMutex lock = writePct < 0 ? mutex : write ? rw.writeLock() : rw.readLock();
                String kind = writePct < 0 ? "" : write ? "W" : "R";
                String tail = writePct < 0 ? " 0 1" : " 0";
                lock.acquire();
                line(out, kind + "ACQ " + pid + tail);
                if (holdMs > 0) Thread.sleep(holdMs);
                line(out, kind + "REL " + pid + tail);
                lock.release();
            }
        }
        c.close();
    }
}
