// The tree cache's figures on one machine: the bootstrap of a tree (until initialized), the memory
// per cached node, and the latency of one change (a write on another session until the listener
// runs) beside its floor: one notification plus one read's round trip, measured alike. Starts its
// own standalone server (forceSync=no, full JIT) unless --connect is given.
//   zkr_cachebench [--connect HOSTS] [--nodes N] [--bytes B] [--changes K] [--churn-rate W] [--churn-seconds S]
//                  [--writer-process yes]  (the changes' writer in a process of its own: see writer_process)
// Churn: W writes a second for S seconds (default 1,000 for 10 s) to nodes in turn; the cache's lag
// (a write's send until its listener hears it) and whether it then equals the server.
// Prints one JSON object. bench/cache_compare.py runs it beside Curator's TreeCache and
// CuratorCache and Kazoo's TreeCache on one server (bench/peers/).
#include "allocation_count.hpp"

#include <zkr/testing.hpp>
#include <zkr/tree_cache.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using clk = std::chrono::steady_clock;

long rss_kib() {
    std::ifstream status("/proc/self/status");
    std::string key;
    long value = 0;
    while (status >> key) {
        if (key == "VmRSS:") {
            status >> value;
            return value;
        }
        status.ignore(4096, '\n');
    }
    return 0;
}

double ms_since(clk::time_point t) { return std::chrono::duration<double, std::milli>(clk::now() - t).count(); }

// depth 3 below the root: 10 x 10 x (nodes / 100) leaves, each `bytes` long (the inner nodes too).
std::vector<std::string> tree_paths(const std::string& root, int nodes) {
    std::vector<std::string> paths{root};
    const int leaves = std::max(1, nodes / 100);
    for (int a = 0; a < 10; ++a) {
        const auto pa = root + "/a" + std::to_string(a);
        paths.push_back(pa);
        for (int b = 0; b < 10; ++b) {
            const auto pb = pa + "/b" + std::to_string(b);
            paths.push_back(pb);
            for (int c = 0; c < leaves; ++c) paths.push_back(pb + "/c" + std::to_string(c));
        }
    }
    return paths;
}

// Creates every path, in order, with up to 500 creates in flight.
void make_tree(zkr::client& c, const std::vector<std::string>& paths, const std::string& data) {
    std::mutex m;
    std::condition_variable cv;
    int in_flight = 0;
    std::size_t level_end = 0;
    // Parents first: the root, the 10, the 100, then the leaves.
    const std::vector<std::size_t> levels{1, 11, 111, paths.size()};
    for (const auto end : levels) {
        for (std::size_t i = level_end; i < end; ++i) {
            std::unique_lock lock(m);
            cv.wait(lock, [&] { return in_flight < 500; });
            ++in_flight;
            lock.unlock();
            c.async_create(paths[i], data, {}, [&](boost::system::error_code ec, zkr::create_result) {
                if (ec && ec != zkr::errc::node_exists) std::cerr << "create: " << ec.message() << "\n";
                std::lock_guard g(m);
                --in_flight;
                cv.notify_all();
            });
        }
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return in_flight == 0; });
        level_end = end;
    }
}

// The changes' writer: a client of this process, or (--writer-process) this program again in a
// process of its own, told each write on a pipe. In one process, the cache's read right after a
// notification can wait for the writer's network thread to leave the C client, whose calls take
// one process-wide lock (zkr::detail::c_client_mutex); in production the writer is elsewhere.
class writer_process {
public:
    writer_process(const char* self, const std::string& hosts) {
        int to[2], from[2];
        if (::pipe(to) != 0 || ::pipe(from) != 0) throw std::runtime_error("pipe");
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, to[0], 0);
        posix_spawn_file_actions_adddup2(&fa, from[1], 1);
        posix_spawn_file_actions_addclose(&fa, to[1]);
        posix_spawn_file_actions_addclose(&fa, from[0]);
        std::vector<std::string> args{self, "--writer-for", hosts};
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        if (posix_spawn(&pid_, self, &fa, nullptr, argv.data(), environ) != 0) throw std::runtime_error("posix_spawn");
        posix_spawn_file_actions_destroy(&fa);
        ::close(to[0]);
        ::close(from[1]);
        out_ = to[1];
        in_ = ::fdopen(from[0], "r");
        if (!answer()) throw std::runtime_error("the writer process did not connect");
    }
    ~writer_process() {
        ::close(out_);
        std::fclose(in_);
        ::waitpid(pid_, nullptr, 0);
    }
    /// Writes data to path (a word, no spaces), and waits for the write's reply.
    void set(const std::string& path, const std::string& data) {
        const auto line = path + " " + data + "\n";
        if (::write(out_, line.data(), line.size()) != static_cast<ssize_t>(line.size()) || !answer()) throw std::runtime_error("the writer process failed");
    }

private:
    bool answer() {
        char buf[16];
        return std::fgets(buf, sizeof buf, in_) && std::string(buf) == "ok\n";
    }
    pid_t pid_ = -1;
    int out_ = -1;
    std::FILE* in_ = nullptr;
};

// --writer-for HOSTS: the writer's side: "PATH DATA" lines in, each written, "ok" out.
int run_writer(const std::string& hosts) {
    zkr::client_options o;
    o.connect_string = hosts;
    zkr::client c(o);
    c.start();
    if (!c.block_until_connected(std::chrono::seconds(20))) return 3;
    std::printf("ok\n");
    std::fflush(stdout);
    std::string path, data;
    while (std::cin >> path >> data) {
        c.set_data(path, data, -1);
        std::printf("ok\n");
        std::fflush(stdout);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::string(argv[1]) == "--writer-for") return run_writer(argv[2]);
    std::optional<std::string> connect;
    int nodes = 10000, bytes = 100, changes = 200, churn_rate = 1000, churn_seconds = 10;
    bool writer_apart = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--connect") connect = v;
        else if (a == "--nodes") nodes = std::stoi(v);
        else if (a == "--bytes") bytes = std::stoi(v);
        else if (a == "--changes") changes = std::stoi(v);
        else if (a == "--churn-rate") churn_rate = std::stoi(v);
        else if (a == "--churn-seconds") churn_seconds = std::stoi(v);
        else if (a == "--writer-process") writer_apart = v == "yes";
        else return std::cerr << "unknown option " << a << "\n", 2;
    }
    std::optional<zkr::testing::cluster> server;
    if (!connect) {
        server.emplace(zkr::testing::cluster_options{.tick_ms = 500, .fast_jvm_start = false});
        connect = server->connect_string();
    }
    zkr::client_options o;
    o.connect_string = *connect;
    o.session_timeout = std::chrono::seconds(10);
    zkr::client writer(o), reader(o);
    writer.start();
    reader.start();
    if (!writer.block_until_connected(std::chrono::seconds(20)) || !reader.block_until_connected(std::chrono::seconds(20)))
        return std::cerr << "no server\n", 3;
    const std::string root = "/cachebench";
    const auto paths = tree_paths(root, nodes);
    make_tree(writer, paths, std::string(static_cast<std::size_t>(bytes), 'x'));

    // Bootstrap: start until initialized; memory before and after.
    const long rss_before = rss_kib();
    zkr::tree_cache cache(reader, root);
    std::mutex m;
    std::condition_variable cv;
    std::optional<clk::time_point> heard_at;
    std::string awaited;
    auto sub = cache.add_listener([&](const zkr::cache_event& e) {
        if (e.type != zkr::cache_event_type::updated) return;
        std::lock_guard lock(m);
        if (e.path == awaited && !heard_at) {
            heard_at = clk::now();
            cv.notify_all();
        }
    });
    const auto t0 = clk::now();
    const auto allocations_before = zkr::bench::allocations();
    cache.start();
    if (!cache.wait_initialized(std::chrono::seconds(120))) return std::cerr << "not initialized\n", 4;
    const double bootstrap_ms = ms_since(t0);
    // Every heap allocation of the process meanwhile (the sessions' pings add a few): the cache's
    // requests, replies, events and the nodes it keeps.
    const auto bootstrap_allocations = zkr::bench::allocations() - allocations_before;
    const long rss_after = rss_kib();
    const auto shown = cache.view().size();

    // Latency: a write on the writer's session until the listener runs, one change at a time.
    // Beside each change, the floor it is held to (one notification plus one round trip), measured
    // through the same clients in the same moments: a plain data watch of the reader's on a node
    // outside the cache, from the writer's write until the watcher runs on the callback thread
    // (the notification, with the same hop to that thread as the cache's listener), and a read's
    // round trip on the reader's session.
    std::vector<double> latencies, notifications, round_trips, by_hand;
    std::optional<writer_process> apart;
    if (writer_apart) apart.emplace("/proc/self/exe", *connect);
    const auto change = [&](const std::string& path, const std::string& data) {
        if (apart) apart->set(path, data);
        else writer.set_data(path, data, -1);
    };
    const std::string probe = "/cachebench-probe";
    boost::system::error_code probe_ec;  // (node_exists, left by an earlier run: fine)
    writer.create(probe, "", {}, probe_ec);
    for (int i = 0; i < changes; ++i) {
        const auto& path = paths[static_cast<std::size_t>(i * 7919) % paths.size()];
        {
            std::lock_guard lock(m);
            awaited = path;
            heard_at.reset();
        }
        const auto sent = clk::now();
        change(path, std::to_string(i));
        std::unique_lock lock(m);
        if (!cv.wait_for(lock, std::chrono::seconds(5), [&] { return heard_at.has_value(); })) return std::cerr << "a change never came\n", 5;
        latencies.push_back(std::chrono::duration<double, std::micro>(*heard_at - sent).count());
        lock.unlock();
        // The notification alone.
        auto fired = std::make_shared<std::promise<clk::time_point>>();
        reader.get_data(probe, std::function<void(const zkr::watch_event&)>([fired](const zkr::watch_event&) { fired->set_value(clk::now()); }));
        auto fired_at = fired->get_future();
        const auto probe_sent = clk::now();
        change(probe, std::to_string(i));
        if (fired_at.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return std::cerr << "a notification never came\n", 5;
        notifications.push_back(std::chrono::duration<double, std::micro>(fired_at.get() - probe_sent).count());
        // A read's round trip.
        const auto read_sent = clk::now();
        (void)reader.get_data(probe);
        round_trips.push_back(std::chrono::duration<double, std::micro>(clk::now() - read_sent).count());
        // By hand: a plain watch whose watcher reads the node again (the cache's work, done with the
        // client's own calls), from the write until that read's answer.
        auto reread = std::make_shared<std::promise<clk::time_point>>();
        reader.get_data(probe, std::function<void(const zkr::watch_event&)>([&reader, reread, probe](const zkr::watch_event&) {
            reader.async_get_data(probe, [reread](boost::system::error_code, zkr::data_result) { reread->set_value(clk::now()); });
        }));
        auto reread_at = reread->get_future();
        const auto reread_sent = clk::now();
        change(probe, std::to_string(i));
        if (reread_at.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return std::cerr << "a re-read never came\n", 5;
        by_hand.push_back(std::chrono::duration<double, std::micro>(reread_at.get() - reread_sent).count());
    }
    writer.remove(probe);
    std::sort(latencies.begin(), latencies.end());
    std::sort(notifications.begin(), notifications.end());
    std::sort(round_trips.begin(), round_trips.end());
    std::sort(by_hand.begin(), by_hand.end());
    const auto pct = [](const std::vector<double>& v, double p) {
        return v.empty() ? 0.0 : v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
    };
    sub = {};

    // Churn: writes at a steady rate (async, on the writer's session) to nodes in turn, each
    // carrying its send time; the cache's lag is, for every update its listener hears, the time
    // since that write was sent. (A write overwritten before the cache reads the node again is
    // heard as the later one, so it adds no lag of its own.) Then the cache must equal the server.
    std::mutex lag_mutex;
    std::vector<double> lags;
    const auto epoch = clk::now();
    auto churn_sub = cache.add_listener([&](const zkr::cache_event& e) {
        if (e.type != zkr::cache_event_type::updated || e.node->data.rfind("t=", 0) != 0) return;
        const auto sent = std::stoll(e.node->data.substr(2));
        const auto lag = std::chrono::duration<double, std::milli>(clk::now() - epoch).count() - static_cast<double>(sent) / 1000.0;
        std::lock_guard lock(lag_mutex);
        lags.push_back(lag);
    });
    const auto failed_writes = std::make_shared<std::atomic<int>>(0);  // (outlives a write still in flight)
    const int writes = churn_rate * churn_seconds;
    const auto gap = std::chrono::nanoseconds(1'000'000'000 / std::max(churn_rate, 1));
    for (int i = 0; i < writes; ++i) {
        std::this_thread::sleep_until(epoch + gap * i);
        const auto sent_us = std::chrono::duration_cast<std::chrono::microseconds>(clk::now() - epoch).count();
        writer.async_set_data(paths[static_cast<std::size_t>(i * 7919) % paths.size()], "t=" + std::to_string(sent_us), -1,
                              [failed_writes](boost::system::error_code ec, zkr::stat) {
                                  if (ec) ++*failed_writes;
                              });
    }
    const double churn_ms = ms_since(epoch);
    // Equal to the server once the writes are in: every node's version as a fresh read gives it.
    bool equal = writes == 0;  // (no churn: nothing to check, and no reads to load the server)
    const auto check_until = clk::now() + std::chrono::seconds(10);
    while (!equal && clk::now() < check_until) {
        equal = true;
        for (const auto& p : paths) {
            boost::system::error_code ec;
            const auto d = writer.get_data(p, ec);
            const auto shown_node = cache.get(p);
            if (ec || !shown_node || shown_node->stat.version != d.stat.version || shown_node->data != d.data) {
                equal = false;
                break;
            }
        }
        if (!equal) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    churn_sub = {};
    cache.close();
    std::sort(lags.begin(), lags.end());
    std::printf("{\"nodes\":%zu,\"shown\":%zu,\"bytes\":%d,\"bootstrap_ms\":%.1f,\"nodes_per_s\":%.0f,\"rss_bytes_per_node\":%.0f,"
                "\"bootstrap_allocations_per_node\":%.1f,"
                "\"change_latency_us\":{\"p50\":%.0f,\"p90\":%.0f,\"p99\":%.0f},"
                "\"notification_us\":{\"p50\":%.0f},\"read_round_trip_us\":{\"p50\":%.0f},\"by_hand_us\":{\"p50\":%.0f},"
                "\"churn\":{\"writes\":%d,\"seconds\":%.1f,\"failed\":%d,\"heard\":%zu,\"lag_ms\":{\"p50\":%.1f,\"p99\":%.1f,\"max\":%.1f},"
                "\"equal_to_server\":%s}}\n",
                paths.size(), shown, bytes, bootstrap_ms, static_cast<double>(shown) / (bootstrap_ms / 1000.0),
                static_cast<double>(rss_after - rss_before) * 1024.0 / static_cast<double>(std::max<std::size_t>(shown, 1)),
                static_cast<double>(bootstrap_allocations) / static_cast<double>(std::max<std::size_t>(shown, 1)), pct(latencies, 0.5),
                pct(latencies, 0.9), pct(latencies, 0.99), pct(notifications, 0.5), pct(round_trips, 0.5), pct(by_hand, 0.5), writes, churn_ms / 1000.0, failed_writes->load(), lags.size(), pct(lags, 0.5),
                pct(lags, 0.99), lags.empty() ? 0.0 : lags.back(), equal ? "true" : "false");
    return equal ? 0 : 6;
}
