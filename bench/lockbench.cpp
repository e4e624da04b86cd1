// lockbench: lock cycles (acquire + release, empty critical section) against a real ZooKeeper.
// Starts its own standalone server (forceSync=no, full JIT) unless --connect is given.
//   zkr_lockbench [--connect HOST:PORT] [--workload w1|w2] [--clients N] [--seconds S] [--log-level L]
//   w1: one session, uncontended. w2: N sessions (default 8) contending on one mutex.
// Prints cycles/s, acquire latency p50/p99, ZooKeeper requests per cycle, and per-client counts.
#include "zk_cluster.hpp"

#include <zkr/zkr.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iostream>
#include <mutex>
#include <thread>

using clk = std::chrono::steady_clock;

int main(int argc, char** argv) {
    std::string connect, workload = "w1", log_level = "off";
    int clients = 0;
    double seconds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--connect")) connect = argv[i + 1];
        else if (!std::strcmp(argv[i], "--workload")) workload = argv[i + 1];
        else if (!std::strcmp(argv[i], "--clients")) clients = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--seconds")) seconds = std::atof(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--log-level")) log_level = argv[i + 1];
        else {
            std::cerr << "unknown option " << argv[i] << '\n';
            return 2;
        }
    }
    if (workload != "w1" && workload != "w2") {
        std::cerr << "--workload must be w1 or w2\n";
        return 2;
    }
    if (clients <= 0) clients = workload == "w1" ? 1 : 8;
    std::unique_ptr<zkr::test::zk_cluster> server;
    if (connect.empty()) {
        server = std::make_unique<zkr::test::zk_cluster>(zkr::test::cluster_options{.tick_ms = 500, .fast_jvm_start = false});
        connect = server->connect_string();
    }
    std::vector<std::unique_ptr<zkr::client>> sessions;
    for (int i = 0; i < clients; ++i) {
        zkr::client_options o;
        o.connect_string = connect;
        o.session_timeout = std::chrono::seconds(10);
        static const auto logger = [&] {
            auto l = spdlog::stderr_color_mt("lockbench");
            l->set_level(spdlog::level::from_str(log_level));
            return l;
        }();
        o.logger = logger;
        sessions.push_back(std::make_unique<zkr::client>(o));
        sessions.back()->start();
        if (!sessions.back()->block_until_connected(std::chrono::seconds(20))) {
            std::cerr << "cannot connect to " << connect << '\n';
            return 1;
        }
    }
    const std::string path = "/lockbench/" + workload + "-" + std::to_string(::getpid());
    // Warm-up: the server's JIT and the parents.
    {
        zkr::interprocess_mutex m(*sessions[0], path);
        const auto until = clk::now() + std::chrono::seconds(2);
        while (clk::now() < until) {
            m.acquire();
            m.release();
        }
    }
    std::uint64_t requests_before = 0;
    for (auto& s : sessions) requests_before += zkr::detail::requests_sent(s->connection());
    std::mutex m;
    std::vector<double> latencies_us;
    std::vector<long> per_client(static_cast<std::size_t>(clients), 0);
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    const auto start = clk::now();
    for (int i = 0; i < clients; ++i) {
        threads.emplace_back([&, i] {
            zkr::interprocess_mutex lock(*sessions[static_cast<std::size_t>(i)], path);
            std::vector<double> mine;
            while (!stop) {
                const auto t0 = clk::now();
                lock.acquire();
                mine.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
                lock.release();
                ++per_client[static_cast<std::size_t>(i)];
            }
            std::lock_guard l(m);
            latencies_us.insert(latencies_us.end(), mine.begin(), mine.end());
        });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop = true;
    for (auto& t : threads) t.join();
    const double elapsed = std::chrono::duration<double>(clk::now() - start).count();
    std::uint64_t requests = 0;
    for (auto& s : sessions) requests += zkr::detail::requests_sent(s->connection());
    requests -= requests_before;
    std::sort(latencies_us.begin(), latencies_us.end());
    const auto pct = [&](double p) { return latencies_us.empty() ? 0.0 : latencies_us[static_cast<std::size_t>(p * (latencies_us.size() - 1))]; };
    const long cycles = static_cast<long>(latencies_us.size());
    std::cout << "workload " << workload << ", " << clients << " session(s), " << elapsed << " s\n"
              << "  cycles/s        " << static_cast<long>(cycles / elapsed) << '\n'
              << "  acquire p50     " << static_cast<long>(pct(0.5)) << " us\n"
              << "  acquire p99     " << static_cast<long>(pct(0.99)) << " us\n"
              << "  requests/cycle  " << (cycles ? static_cast<double>(requests) / cycles : 0) << '\n'
              << "  per client      min " << *std::min_element(per_client.begin(), per_client.end()) << ", max "
              << *std::max_element(per_client.begin(), per_client.end()) << '\n';
    return 0;
}
