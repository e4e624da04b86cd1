// Curator 5.4's ServiceProvider for bench/discoverybench.cpp: a provider (round robin, Curator's
// default) of the service "svc" under BASE; once its cache shows K instances it calls
// getInstance() for one second and prints "lookups N NS"; it prints "seen ID NS" (System.nanoTime:
// CLOCK_MONOTONIC on Linux) when its cache first shows an instance beyond the K; until killed.
//   java -cp CLASSES:/usr/share/java/curator-x-discovery.jar:/usr/share/java/curator-recipes.jar CuratorDiscoveryBench CONNECT BASE K
import java.util.HashSet;
import java.util.Set;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceProvider;
import org.apache.curator.x.discovery.details.ServiceCacheListener;
import org.apache.curator.x.discovery.ServiceCache;

public class CuratorDiscoveryBench {
    public static void main(String[] args) throws Exception {
        String connect = args[0], base = args[1];
        int k = Integer.parseInt(args[2]);
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 10000, 15000, new ExponentialBackoffRetry(100, 5));
        c.start();
        c.blockUntilConnected();
        ServiceDiscovery<String> discovery = ServiceDiscoveryBuilder.builder(String.class).client(c).basePath(base).build();
        discovery.start();
        // The seen times come from a cache of its own, as a user's listener would; the lookups from
        // the provider (its own cache of the same service).
        ServiceCache<String> cache = discovery.serviceCacheBuilder().name("svc").build();
        Set<String> seen = new HashSet<>();
        Runnable reportNew = () -> {
            long t = System.nanoTime();
            synchronized (seen) {
                for (ServiceInstance<String> i : cache.getInstances())
                    if (seen.add(i.getId()) && seen.size() > k) {
                        System.out.println("seen " + i.getId() + " " + t);
                        System.out.flush();
                    }
            }
        };
        cache.addListener(new ServiceCacheListener() {
            public void cacheChanged() { reportNew.run(); }
            public void stateChanged(CuratorFramework client, ConnectionState state) {}
        });
        cache.start();
        ServiceProvider<String> provider = discovery.serviceProviderBuilder().serviceName("svc").build();
        provider.start();
        while (provider.getAllInstances().size() < k) Thread.sleep(1);
        reportNew.run();
        long lookups = 0, start = System.nanoTime();
        while (System.nanoTime() - start < 1_000_000_000L)
            for (int n = 0; n < 100; ++n) lookups += provider.getInstance() != null ? 1 : 0;
        System.out.println("lookups " + lookups + " " + (System.nanoTime() - start));
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
