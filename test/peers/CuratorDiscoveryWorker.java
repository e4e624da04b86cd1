// A Curator 5.4 curator-x-discovery process beside zkr's service_discovery, for the interop test:
// it registers an instance of NAME under BASE (id ID, address "curator-host", port 7000, payload
// the String "curator:ID", uriSpec "{scheme}://{address}:{port}", in Curator's default JSON) and
// keeps a ServiceCache of NAME that, every 50 ms when its view changed, writes to LOG (a temporary
// file renamed over it): "initialized", then per instance, sorted by id,
// "ID<TAB>ADDRESS<TAB>PORT<TAB>PAYLOAD<TAB>URI<TAB>ENABLED<TAB>TYPE" (URI: uriSpec.build(instance)).
// On SIGTERM it closes the discovery (its instance unregistered) and its session.
//   java -cp CLASSES:/usr/share/java/curator-x-discovery.jar:/usr/share/java/curator-recipes.jar CuratorDiscoveryWorker CONNECT BASE NAME ID LOG
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.TreeMap;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.UriSpec;

public class CuratorDiscoveryWorker {
    public static void main(String[] args) throws Exception {
        String connect = args[0], base = args[1], name = args[2], id = args[3], log = args[4];
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 15000, new ExponentialBackoffRetry(100, 5));
        c.start();
        c.blockUntilConnected();
        ServiceDiscovery<String> discovery = ServiceDiscoveryBuilder.builder(String.class).client(c).basePath(base).build();
        discovery.start();
        ServiceInstance<String> mine = ServiceInstance.<String>builder()
                .name(name).id(id).address("curator-host").port(7000).payload("curator:" + id)
                .uriSpec(new UriSpec("{scheme}://{address}:{port}")).build();
        discovery.registerService(mine);
        ServiceCache<String> cache = discovery.serviceCacheBuilder().name(name).build();
        cache.start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                cache.close();
                discovery.close();
            } catch (Exception e) {
                e.printStackTrace();
            }
            c.close();
        }));
        Path target = Paths.get(log), temporary = Paths.get(log + ".tmp");
        String last = null;
        for (;;) {
            TreeMap<String, String> view = new TreeMap<>();
            for (ServiceInstance<String> i : cache.getInstances()) {
                String uri = i.getUriSpec() == null ? "" : i.getUriSpec().build(i);
                view.put(i.getId(), i.getId() + "\t" + i.getAddress() + "\t" + i.getPort() + "\t" + i.getPayload() + "\t" + uri + "\t"
                        + i.isEnabled() + "\t" + i.getServiceType());
            }
            StringBuilder text = new StringBuilder("initialized\n");
            for (String line : view.values()) text.append(line).append('\n');
            if (!text.toString().equals(last)) {
                last = text.toString();
                Files.write(temporary, last.getBytes(StandardCharsets.UTF_8));
                Files.move(temporary, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            }
            Thread.sleep(50);
        }
    }
}
