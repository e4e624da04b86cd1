// Curator 5.4's PersistentNode for bench/nodebench.cpp: an EPHEMERAL PersistentNode at PATH
// holding "curator"; prints "session <id> <password hex>" on each new session (its first, and
// each after an expiry), until killed.
//   java -cp CLASSES:/usr/share/java/curator-recipes.jar CuratorNodeBench CONNECT PATH
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooKeeper;

public class CuratorNodeBench {
    static synchronized void saySession(CuratorFramework c) throws Exception {
        ZooKeeper zk = c.getZookeeperClient().getZooKeeper();
        StringBuilder hex = new StringBuilder();
        for (byte b : zk.getSessionPasswd()) hex.append(String.format("%02x", b));
        System.out.println("session " + zk.getSessionId() + " " + hex);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(args[0], 10000, 15000, new ExponentialBackoffRetry(100, 5));
        c.getConnectionStateListenable().addListener((client, state) -> {
            if (state == ConnectionState.CONNECTED || state == ConnectionState.RECONNECTED) {
                try {
                    saySession(client);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }
        });
        c.start();
        c.blockUntilConnected();
        PersistentNode node = new PersistentNode(c, CreateMode.EPHEMERAL, false, args[1], "curator".getBytes(StandardCharsets.UTF_8));
        node.start();
        node.waitForInitialCreate(10, TimeUnit.SECONDS);
        Thread.sleep(Long.MAX_VALUE);
    }
}
