// Curator 5.4's DistributedDoubleBarrier for bench/barrier_compare.py, one member per process: for
// each round r of ROUNDS it enters and leaves the barrier BASE/r<r> of MEMBERS members, appending
// the lines of test/support/barrier_worker.cpp to LOG ("entering|entered|leaving|left <pid> <r>
// <ns>", ns from System.nanoTime: CLOCK_MONOTONIC on Linux), one write each (O_APPEND).
//   java -cp CLASSES:/usr/share/java/curator-recipes.jar CuratorBarrierBench CONNECT BASE MEMBERS ROUNDS LOG
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorBarrierBench {
    public static void main(String[] args) throws Exception {
        String connect = args[0], base = args[1];
        int members = Integer.parseInt(args[2]), rounds = Integer.parseInt(args[3]);
        long pid = ProcessHandle.current().pid();
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 15000, new ExponentialBackoffRetry(100, 5));
        c.start();
        c.blockUntilConnected();
        try (FileOutputStream log = new FileOutputStream(args[4], true)) {
            for (int r = 0; r < rounds; ++r) {
                DistributedDoubleBarrier barrier = new DistributedDoubleBarrier(c, base + "/r" + r, members);
                line(log, "entering", pid, r);
                barrier.enter();
                line(log, "entered", pid, r);
                line(log, "leaving", pid, r);
                barrier.leave();
                line(log, "left", pid, r);
            }
        }
        c.close();
    }

    static void line(FileOutputStream log, String what, long pid, int r) throws Exception {
        log.write((what + " " + pid + " " + r + " " + System.nanoTime() + "\n").getBytes(StandardCharsets.US_ASCII));
    }
}
