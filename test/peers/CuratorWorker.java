// A Curator 5.4 process contending with zkr's on one path, for the interop tests: the same log
// lines as zkr_lock_worker ("ACQ|REL <pid> 0 1" for a mutex, and for a LeaderLatch once it leads
// (ITERATIONS ignored), and for a LeaderSelector's one term (takeLeadership, then it leaves); "RACQ|WACQ|RREL|WREL <pid> 0" for a read-write lock), appended with one write each (O_APPEND), so the file order is a real-time order.
// revocable: holds a revocable InterProcessMutex until asked to let go (at most 30 s), logging
// "ACQ <pid> 0 1" and then "REVOKED <pid>"; revoke: waits for a lock node under PATH and asks its
// holder to let go with Curator's Revoker; semaphore:MAX: an InterProcessSemaphoreV2 of MAX leases,
// one lease at a time ("ACQ|REL <pid> 0 1"). Curator has no fencing token: it logs 0.
//   java -cp CLASSES:/usr/share/java/curator-recipes.jar CuratorWorker CONNECT mutex|latch|selector|revocable|revoke|rw:PCT|semaphore:MAX PATH ITERATIONS HOLD_MS LOG
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorWorker {
    static void line(FileOutputStream out, String s) throws IOException {
        out.write((s + "\n").getBytes(StandardCharsets.US_ASCII));
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0], recipe = args[1], path = args[2];
        int iterations = Integer.parseInt(args[3]), holdMs = Integer.parseInt(args[4]);
        long pid = ProcessHandle.current().pid();
        Random rng = new Random(pid);
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 15000, new ExponentialBackoffRetry(100, 5));
        c.start();
        c.blockUntilConnected();
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
