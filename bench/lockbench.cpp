// lockbench: zkr's recipes against a real ZooKeeper, one workload per run.
// Starts its own standalone server (forceSync=no, full JIT) unless --connect is given.
//   zkr_lockbench [--connect HOST:PORT] [--workload W] [--clients N] [--seconds S] [--json]
//                 [--force-sync yes|no] [--log-level L] [--blocking-call-spin-us N]
//                 [--release sync|async] [--cache-hold] [--reads-only]
// Workloads (as in issue 6):
//   w0  plain operations, one session: sequential get_data, then create + delete (issue 24)
//   raw0 the same with the ZooKeeper C client, no zkr
//   raw0-hop, raw0-epoll  the same through a C handle that a network thread owns: today's hop
//       (the caller wakes that thread, which hands the reply back), or a baton over one shared
//       epoll (the caller waits for its own reply); see threaded_raw.hpp
//   w1  one session, uncontended mutex          w2  8 sessions, one mutex
//   w3  64 sessions, one mutex                  w4  8 sessions, a semaphore of 3 leases
//   w5  8 sessions, one semaphore_mutex         w6  handoff latency: release -> next holder (8 sessions)
//   w8  8 sessions, a read-write lock, 90% reads
//   w9  leader failover: a leader_latch's clean close -> the next participant's is_leader (2 sessions)
//   w10 leader failover after SIGKILL: a leader in a child process (2 s session) is killed -> the
//       next participant's is_leader; one kill per second of --seconds (at least 2)
//   w7  1,000 waiters queued on one lock (async acquires over 8 sessions)
//   raw the floor: one lock cycle's bare calls (create + getChildren pipelined, then delete) with
//       the ZooKeeper C client, no zkr
//   mem RSS of one client holding 1,000 lock objects (each holding its own lock)
//   notify  the server's notification latency: a delete on one session -> the watch on another
//   cachewait  lock caching's waiter: one session cycles a mutex (with --cache-hold: caching) as
//       fast as it can, another's plain mutex acquires every 10 ms (its latency: the hand-off)
// --cache-hold: the mutex workloads (w1, w2, w3, w6) with mutex_options::cache_hold (lock caching)
// --reads-only: w0 and raw0 (-hop, -epoll) run get_data alone, without the create + delete half,
//     so that a count over the whole process (bench/instructions.py) is per get_data
// --release async: the mutex workloads (w1, w2, w3, w6) and w8 release with interprocess_mutex::async_release
// and do not wait for the delete (default sync: release(), which returns once the delete is done).
// Prints rate, acquire p50/p99, handoff p50/p99, fairness (min/max per client), ZooKeeper requests
// per cycle, CPU time per 1,000 cycles; --json prints one JSON object instead.
#include "allocation_count.hpp"
#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "process.hpp"
#include "threaded_raw.hpp"
#include "zk_cluster.hpp"

#include <zkr/zkr.hpp>

#include <boost/asio/detached.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <zookeeper/zookeeper.h>

#include <poll.h>
#include <signal.h>
#include <unistd.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

using clk = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

struct settings {
    std::string connect, workload = "w1", log_level = "off";
    int clients = 0;
    double seconds = 5;
    bool json = false;
    bool force_sync = false;
    double warmup = 2;
    long blocking_call_spin_us = -1;  // -1: the client's default
    bool async_release = false;
    bool cache_hold = false;  // --cache-hold: the mutex workloads with mutex_options::cache_hold
    bool reads_only = false;  // --reads-only: w0's get_data half alone
    bool observer = false;  // --observer counting: every client tells a counting observer
    std::chrono::milliseconds session_timeout = std::chrono::seconds(10);
    std::string path;  // w10-leader: the election to lead
};

// W10's session timeout: the failover after a SIGKILL is the server's expiry of the dead leader's
// session, so both programs use the same one.
constexpr std::chrono::milliseconds kill_session_timeout{2000};

struct result {
    long cycles = 0;
    long server_requests = 0;  ///< what the server received during the measured window
    double elapsed = 0;
    std::vector<double> acquire_us, handoff_us, release_us;
    std::vector<long> per_client;
    std::uint64_t requests = 0;
    double cpu_seconds = 0;
    std::map<std::string, double> extra;
};

long server_received(const std::string& connect);

double cpu_now() {
    rusage u{};
    ::getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// The heap allocations and frees of a measured window, per operation (issue 48: the client's
// work per request): every thread's, the benchmark's own included (its latency vectors grow
// a few dozen times in a run, a rounding error against thousands of cycles).
struct heap_count {
    std::uint64_t allocations = zkr::bench::allocations(), frees = zkr::bench::frees();
    void put(result& r, const std::string& per, long operations) const {
        const auto allocated = zkr::bench::allocations() - allocations, freed = zkr::bench::frees() - frees;
        const auto n = static_cast<double>(std::max(operations, 1L));
        r.extra["allocations_per_" + per] = static_cast<double>(allocated) / n;
        r.extra["frees_per_" + per] = static_cast<double>(freed) / n;
    }
};

double pct(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now().time_since_epoch()).count(); }

// The cheapest observer that still hears everything: what an observer costs when one is set
// (without one, no event is made at all).
struct counting_observer final : zkr::observer {
    std::atomic<std::uint64_t> events{0};
    void on_operation(const zkr::operation_event&) override { ++events; }
    void on_session(const zkr::session_event&) override { ++events; }
    void on_hold(const zkr::hold_event&) override { ++events; }
    void on_leadership(const zkr::leadership_event&) override { ++events; }
};

std::vector<std::unique_ptr<zkr::client>> open_sessions(const settings& s, int n) {
    static const auto logger = [&] {
        auto l = spdlog::stderr_color_mt("lockbench");
        l->set_level(spdlog::level::from_str(s.log_level));
        return l;
    }();
    std::vector<std::unique_ptr<zkr::client>> out;
    for (int i = 0; i < n; ++i) {
        zkr::client_options o;
        o.connect_string = s.connect;
        if (s.blocking_call_spin_us >= 0) o.blocking_call_spin = std::chrono::microseconds(s.blocking_call_spin_us);
        o.session_timeout = s.session_timeout;
        o.logger = logger;
        if (s.observer) o.observer = std::make_shared<counting_observer>();
        out.push_back(std::make_unique<zkr::client>(o));
        out.back()->start();
        if (!out.back()->block_until_connected(20s)) throw std::runtime_error("cannot connect to " + s.connect);
    }
    return out;
}

std::uint64_t requests_of(const std::vector<std::unique_ptr<zkr::client>>& sessions) {
    std::uint64_t n = 0;
    for (const auto& c : sessions) n += zkr::detail::requests_sent(zkr::detail::connection_of(*c));
    return n;
}

// One cycle's acquire and release of each recipe, behind one shape.
struct mutex_recipe {
    zkr::interprocess_mutex m;
    mutex_recipe(zkr::client& c, const std::string& p) : m(c, p) {}
    void acquire() { m.acquire(); }
    void release() { m.release(); }
};
struct mutex_async_release_recipe {
    zkr::interprocess_mutex m;
    mutex_async_release_recipe(zkr::client& c, const std::string& p) : m(c, p) {}
    void acquire() { m.acquire(); }
    void release() { m.async_release(boost::asio::detached); }
};
struct mutex_cached_recipe {
    zkr::interprocess_mutex m;
    mutex_cached_recipe(zkr::client& c, const std::string& p) : m(c, p, zkr::mutex_options{.cache_hold = true}) {}
    void acquire() { m.acquire(); }
    void release() { m.release(); }
};
struct semaphore_recipe {
    zkr::interprocess_semaphore_v2 s;
    std::optional<zkr::lease> l;
    semaphore_recipe(zkr::client& c, const std::string& p) : s(c, p, 3) {}
    void acquire() { l.emplace(s.acquire()); }
    void release() {
        l->close();
        l.reset();
    }
};
// W8: a read-write lock, 90% reads: every tenth cycle of each client writes (the clients start at
// different points of the ten, as the peers' drivers do).
struct read_write_recipe {
    static inline std::atomic<int> next_offset{0};
    zkr::interprocess_read_write_lock rw;
    int cycle = next_offset++;
    zkr::interprocess_mutex* held = nullptr;
    read_write_recipe(zkr::client& c, const std::string& p) : rw(c, p) {}
    void acquire() {
        held = ++cycle % 10 == 0 ? &rw.write_lock() : &rw.read_lock();
        held->acquire();
    }
    void release() { held->release(); }
};
// W8 with --release async: each release is interprocess_mutex::async_release (not awaited).
struct read_write_async_release_recipe : read_write_recipe {
    using read_write_recipe::read_write_recipe;
    void release() { held->async_release(boost::asio::detached); }
};
struct semaphore_mutex_recipe {
    zkr::interprocess_semaphore_mutex m;
    semaphore_mutex_recipe(zkr::client& c, const std::string& p) : m(c, p) {}
    void acquire() { m.acquire(); }
    void release() { m.release(); }
};

// Each session's thread acquires and releases as fast as it can. The handoff is the time from a
// release's start to the moment the next holder's acquire returns, when that holder was waiting.
template <typename Recipe>
result run_cycles(const settings& s, int clients, const std::string& path) {
    auto sessions = open_sessions(s, clients);
    {  // warm-up: the server's JIT, and the parents
        Recipe r(*sessions[0], path);
        for (const auto until = clk::now() + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(s.warmup));
             clk::now() < until;) {
            r.acquire();
            r.release();
        }
    }
    result out;
    out.per_client.assign(static_cast<std::size_t>(clients), 0);
    std::atomic<std::int64_t> release_started{0};
    std::atomic<bool> stop{false};
    std::mutex m;
    std::vector<std::thread> threads;
    const auto requests_before = requests_of(sessions);
    const long server_before = server_received(s.connect);
    const double cpu_before = cpu_now();
    const heap_count heap_before;
    const auto start = clk::now();
    for (int i = 0; i < clients; ++i) {
        threads.emplace_back([&, i] {
            Recipe r(*sessions[static_cast<std::size_t>(i)], path);
            std::vector<double> acq, hand, rels;
            while (!stop) {
                const auto t0 = now_ns();
                r.acquire();
                const auto t1 = now_ns();
                acq.push_back(static_cast<double>(t1 - t0) / 1000);
                const auto rel = release_started.load();
                if (clients > 1 && rel > t0) hand.push_back(static_cast<double>(t1 - rel) / 1000);
                const auto r0 = now_ns();
                release_started = r0;
                r.release();
                rels.push_back(static_cast<double>(now_ns() - r0) / 1000);
                ++out.per_client[static_cast<std::size_t>(i)];
            }
            std::lock_guard l(m);
            out.acquire_us.insert(out.acquire_us.end(), acq.begin(), acq.end());
            out.handoff_us.insert(out.handoff_us.end(), hand.begin(), hand.end());
            out.release_us.insert(out.release_us.end(), rels.begin(), rels.end());
        });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(s.seconds));
    stop = true;
    for (auto& t : threads) t.join();
    out.elapsed = std::chrono::duration<double>(clk::now() - start).count();
    out.cpu_seconds = cpu_now() - cpu_before;
    out.requests = requests_of(sessions) - requests_before;
    out.server_requests = server_received(s.connect) - server_before;
    out.cycles = static_cast<long>(out.acquire_us.size());
    heap_before.put(out, "cycle", out.cycles);
    out.extra["release_p50_us"] = pct(out.release_us, 0.5);
    return out;
}

// W7: 1,000 waiters queued on one lock, then drained: each grant returns its lease at once and
// the next waiter holds. Async acquires of a one-lease semaphore (any thread may return a lease),
// spread over 8 sessions. Per handoff: the rate and the server's requests, to compare with W2.
result run_deep_queue(const settings& s, const std::string& path) {
    constexpr int waiters = 1000, session_count = 8;
    auto sessions = open_sessions(s, session_count);
    std::vector<std::unique_ptr<zkr::interprocess_semaphore_v2>> sems;
    for (auto& c : sessions) sems.push_back(std::make_unique<zkr::interprocess_semaphore_v2>(*c, path, 1));
    zkr::interprocess_semaphore_v2 gate(*sessions[0], path, 1);
    auto first = gate.acquire();  // everyone queues behind it
    result out;
    out.per_client.assign(session_count, 0);
    std::mutex m;
    std::atomic<int> done{0};
    std::promise<void> drained;
    for (int w = 0; w < waiters; ++w) {
        const int i = w % session_count;
        sems[static_cast<std::size_t>(i)]->async_acquire(1, [&, i](boost::system::error_code ec, std::vector<zkr::lease> leases) {
            if (!ec && !leases.empty()) {
                {
                    std::lock_guard l(m);
                    out.acquire_us.push_back(static_cast<double>(now_ns()));  // grant time; made relative below
                    ++out.per_client[static_cast<std::size_t>(i)];
                }
                leases.front().close();
            }
            if (++done == waiters) drained.set_value();
        });
    }
    for (const auto until = clk::now() + 120s; clk::now() < until;) {
        if (gate.participant_nodes().size() >= waiters + 1) break;
        std::this_thread::sleep_for(100ms);
    }
    // Every node exists, but a waiter may still be listing or setting its watch: the drain starts
    // once the sessions have sent nothing for 300 ms, so it counts only the handoffs' requests.
    for (auto [seen, until] = std::pair{requests_of(sessions), clk::now() + 60s}; clk::now() < until;) {
        std::this_thread::sleep_for(300ms);
        const auto now_sent = requests_of(sessions);
        if (now_sent == seen) break;
        seen = now_sent;
    }
    out.extra["queued"] = static_cast<double>(gate.participant_nodes().size() - 1);
    const auto requests_before = requests_of(sessions);
    const long server_before = server_received(s.connect);
    const double cpu_before = cpu_now();
    const auto start = clk::now();
    const auto start_ns = now_ns();
    first.close();
    if (drained.get_future().wait_for(300s) != std::future_status::ready) throw std::runtime_error("the queue did not drain");
    out.elapsed = std::chrono::duration<double>(clk::now() - start).count();
    out.cpu_seconds = cpu_now() - cpu_before;
    out.requests = requests_of(sessions) - requests_before;
    out.server_requests = server_received(s.connect) - server_before;
    out.cycles = static_cast<long>(out.acquire_us.size());
    for (auto& t : out.acquire_us) t = (t - static_cast<double>(start_ns)) / 1000;  // time to hold, from the first release
    return out;
}

// cachewait: lock caching's promise to waiters (issue 48). One session cycles a mutex as fast as
// it can (with --cache-hold: mutex_options::cache_hold, its kept node taken back with no request
// while nobody queues); another session's plain mutex acquires every 10 ms, and its acquire time
// is the waiter's latency. Behind a cacher: its create and listing, the notification to the
// cacher, the kept node's delete (after the hold in progress there), and the notification back;
// without --cache-hold, the same waiter behind a plain holder's cycles, for comparison.
template <typename Cycler>
result run_cache_wait(const settings& s, const std::string& path) {
    auto sessions = open_sessions(s, 2);
    result out;
    out.per_client.assign(2, 0);
    std::atomic<bool> stop{false};
    const auto requests_before = requests_of(sessions);
    const double cpu_before = cpu_now();
    const auto start = clk::now();
    std::thread cacher([&] {
        Cycler r(*sessions[0], path);
        while (!stop) {
            r.acquire();
            r.release();
            ++out.per_client[0];
        }
    });
    std::thread waiter([&] {
        mutex_recipe r(*sessions[1], path);
        while (!stop) {
            std::this_thread::sleep_for(10ms);
            const auto t0 = now_ns();
            r.acquire();
            out.acquire_us.push_back(static_cast<double>(now_ns() - t0) / 1000);
            r.release();
            ++out.per_client[1];
        }
    });
    std::this_thread::sleep_for(std::chrono::duration<double>(s.seconds));
    stop = true;
    cacher.join();
    waiter.join();
    out.elapsed = std::chrono::duration<double>(clk::now() - start).count();
    out.cpu_seconds = cpu_now() - cpu_before;
    out.requests = requests_of(sessions) - requests_before;
    out.cycles = out.per_client[0] + out.per_client[1];
    out.extra["cacher_cycles"] = static_cast<double>(out.per_client[0]);
    out.extra["waiter_cycles"] = static_cast<double>(out.per_client[1]);
    out.extra["waiter_p50_us"] = pct(out.acquire_us, 0.5);
    out.extra["waiter_p99_us"] = pct(out.acquire_us, 0.99);
    out.extra["waiter_max_us"] = out.acquire_us.empty() ? 0 : *std::max_element(out.acquire_us.begin(), out.acquire_us.end());
    return out;
}

// When a latch's participant last heard that it leads: W9's and W10's clock.
struct leadership_clock {
    std::mutex m;
    std::condition_variable cv;
    std::int64_t led_at = 0;  // now_ns() of the newest is_leader (under m)

    zkr::state_subscription listen(zkr::leader_latch& latch) {
        return latch.add_listener([this](bool leads) {
            if (!leads) return;
            std::lock_guard l(m);
            led_at = now_ns();
            cv.notify_all();
        });
    }

    // The time of an is_leader heard after `after`; throws after 30 s without one.
    std::int64_t await_after(std::int64_t after) {
        std::unique_lock l(m);
        if (!cv.wait_for(l, 30s, [&] { return led_at > after; })) throw std::runtime_error("no new leader within 30 s");
        return led_at;
    }
};

// W9: leader failover after a clean close. Two sessions, one latch each; the leader closes its
// latch and the other's listener hears that it leads: the time between the two is the failover.
// The closed side then joins again behind the new leader (not timed), and the roles swap.
result run_failover(const settings& s, const std::string& path) {
    auto sessions = open_sessions(s, 2);
    result out;
    out.per_client.assign(2, 0);
    struct side {
        std::unique_ptr<zkr::leader_latch> latch;
        zkr::state_subscription sub;
    };
    leadership_clock clock;
    auto join = [&](std::size_t i) {
        side sd;
        sd.latch = std::make_unique<zkr::leader_latch>(*sessions[i], path, "p" + std::to_string(i));
        sd.sub = clock.listen(*sd.latch);
        sd.latch->start();
        return sd;
    };
    auto await_led = [&](std::int64_t after) { return clock.await_after(after); };
    std::array<side, 2> sides;
    sides[0] = join(0);
    await_led(0);
    sides[1] = join(1);
    std::size_t leader = 0;
    const auto run_for = [&](double seconds, bool measure) {
        for (const auto until = clk::now() + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(seconds));
             clk::now() < until;) {
            const std::size_t next = 1 - leader;
            while (sides[leader].latch->participants().size() < 2) std::this_thread::sleep_for(1ms);  // the next one is queued
            const auto t0 = now_ns();
            sides[leader].latch->close();
            const auto t1 = await_led(t0);
            if (measure) {
                out.handoff_us.push_back(static_cast<double>(t1 - t0) / 1000);
                ++out.per_client[next];
            }
            sides[leader] = join(leader);
            leader = next;
        }
    };
    run_for(s.warmup, false);
    const auto requests_before = requests_of(sessions);
    const long server_before = server_received(s.connect);
    const double cpu_before = cpu_now();
    const auto start = clk::now();
    run_for(s.seconds, true);
    out.elapsed = std::chrono::duration<double>(clk::now() - start).count();
    out.cpu_seconds = cpu_now() - cpu_before;
    out.requests = requests_of(sessions) - requests_before;
    out.server_requests = server_received(s.connect) - server_before;
    out.acquire_us = out.handoff_us;  // a failover is the next leader's acquire
    out.cycles = static_cast<long>(out.handoff_us.size());
    return out;
}

// W10: the pause before a kill, at random in 0..999 ms (CuratorBench does the same). A dead
// session expires at its last request plus the session timeout, rounded up to the server's tick
// (500 ms): fixed delays meet each client's ping timing at a fixed phase, and the two programs'
// figures then differ by up to a tick for that reason alone (measured: 200 ms).
int kill_delay_ms() {
    static std::mt19937 rng{std::random_device{}()};
    return static_cast<int>(rng() % 1000);
}

// W10's child: leads the election at s.path until it is killed.
[[noreturn]] void lead_until_killed(settings s) {
    s.session_timeout = kill_session_timeout;
    auto sessions = open_sessions(s, 1);
    zkr::leader_latch latch(*sessions[0], s.path, "killed");
    latch.start();
    for (;;) ::pause();
}

// W10: leader failover after SIGKILL. The leader is a child process (this program, w10-leader);
// once this process's participant is queued behind it, the child is killed, and the time until
// this participant hears that it leads is the failover: the server's expiry of the child's
// session (2 s) and one notification. Kills: one per second of --seconds, at least 2.
result run_failover_after_kill(settings s, const std::string& path) {
    s.session_timeout = kill_session_timeout;
    auto sessions = open_sessions(s, 1);
    auto& c = *sessions[0];
    result out;
    out.per_client.assign(1, 0);
    const int kills = std::max(2, static_cast<int>(s.seconds));
    const auto start = clk::now();
    for (int i = 0; i < kills; ++i) {
        zkr::test::child_process leader({"/proc/self/exe", "--connect", s.connect, "--workload", "w10-leader", "--path", path});
        const auto until = clk::now() + 30s;
        for (;;) {  // the child is queued (its latch leads the moment it is alone)
            boost::system::error_code ec;  // (no_node until the child's create makes the path)
            if (c.get_children(path, ec).children.size() == 1) break;
            if (clk::now() > until) throw std::runtime_error("the w10 leader never joined " + path);
            std::this_thread::sleep_for(1ms);
        }
        leadership_clock clock;
        zkr::leader_latch latch(c, path, "survivor");
        auto sub = clock.listen(latch);
        latch.start();
        while (latch.participants().size() < 2) std::this_thread::sleep_for(1ms);
        // At a moment of no relation to the child's last request.
        std::this_thread::sleep_for(std::chrono::milliseconds(kill_delay_ms()));
        const auto t0 = now_ns();
        leader.kill(SIGKILL);
        out.handoff_us.push_back(static_cast<double>(clock.await_after(t0) - t0) / 1000);
        ++out.per_client[0];
        (void)leader.wait();
        latch.close();
    }
    out.elapsed = std::chrono::duration<double>(clk::now() - start).count();
    out.acquire_us = out.handoff_us;
    out.cycles = static_cast<long>(out.handoff_us.size());
    return out;
}

// The floor: one lock cycle's bare calls made with the C client (single-threaded library), no zkr:
// create (ephemeral sequential) and getChildren sent together, then delete.
struct raw_client {
    zhandle_t* zh = nullptr;
    int pending = 0;
    std::string created;
    explicit raw_client(const std::string& connect) {
        zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
        zh = zookeeper_init(connect.c_str(), nullptr, 10000, nullptr, this, 0);
        if (!zh) throw std::runtime_error("zookeeper_init failed");
        // As zkr does: otherwise the C client resolves the host names in every zookeeper_interest
        // (a getaddrinfo: a netlink socket and /etc/hosts, about ten system calls).
        zoo_set_servers_resolution_delay(zh, -1);
        for (const auto until = clk::now() + 20s; zoo_state(zh) != ZOO_CONNECTED_STATE;) {
            if (clk::now() > until) throw std::runtime_error("raw client cannot connect");
            step();
        }
    }
    ~raw_client() { zookeeper_close(zh); }
    void step() {
        int fd = -1, interest = 0;
        timeval tv{};
        zookeeper_interest(zh, &fd, &interest, &tv);
        pollfd p{fd, lockbench::poll_events_of(interest), 0};
        ::poll(&p, fd >= 0 ? 1 : 0, 10);
        zookeeper_process(zh, lockbench::zk_events_of(p.revents));
    }
    void wait_all() {
        while (pending > 0) step();
    }
    static void on_string(int rc, const char* value, const void* data) {
        auto* self = static_cast<raw_client*>(const_cast<void*>(data));
        if (rc != ZOK) throw std::runtime_error("raw create failed");
        self->created = value;
        --self->pending;
    }
    static void on_children(int rc, const String_vector*, const void* data) {
        if (rc != ZOK) throw std::runtime_error("raw getChildren failed");
        --static_cast<raw_client*>(const_cast<void*>(data))->pending;
    }
    static void on_void(int rc, const void* data) {
        if (rc != ZOK) throw std::runtime_error("raw delete failed");
        --static_cast<raw_client*>(const_cast<void*>(data))->pending;
    }
    static void on_data(int rc, const char*, int, const Stat*, const void* data) {
        if (rc != ZOK) throw std::runtime_error("raw getData failed");
        --static_cast<raw_client*>(const_cast<void*>(data))->pending;
    }
    // /lockbench and path, with `data` in path (either may exist already).
    void make_path(const std::string& path, const std::string& data) {
        for (const std::string& p : {std::string("/lockbench"), path}) {
            pending = 1;
            const auto& d = p == path ? data : std::string();
            zoo_acreate(zh, p.c_str(), d.data(), static_cast<int>(d.size()), &ZOO_OPEN_ACL_UNSAFE, 0, [](int, const char*, const void* self) {
                --static_cast<raw_client*>(const_cast<void*>(self))->pending;
            }, this);
            wait_all();
        }
    }
};

result run_raw(const settings& s, const std::string& path) {
    raw_client c(s.connect);
    c.make_path(path, "");
    const std::string prefix = path + "/lock-";
    auto cycle = [&](result* r) {
        const auto t0 = now_ns();
        c.pending = 2;
        zoo_acreate(c.zh, prefix.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, raw_client::on_string, &c);
        zoo_aget_children(c.zh, path.c_str(), 0, raw_client::on_children, &c);
        c.wait_all();
        if (r) r->acquire_us.push_back(static_cast<double>(now_ns() - t0) / 1000);
        c.pending = 1;
        zoo_adelete(c.zh, c.created.c_str(), -1, raw_client::on_void, &c);
        c.wait_all();
    };
    for (const auto until = clk::now() + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(s.warmup));
         clk::now() < until;)
        cycle(nullptr);
    result out;
    out.per_client = {0};
    const long server_before = server_received(s.connect);
    const double cpu_before = cpu_now();
    const auto start = clk::now();
    const auto until = start + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(s.seconds));
    while (clk::now() < until) {
        cycle(&out);
        ++out.per_client[0];
    }
    out.elapsed = std::chrono::duration<double>(clk::now() - start).count();
    out.cpu_seconds = cpu_now() - cpu_before;
    out.cycles = static_cast<long>(out.acquire_us.size());
    out.requests = static_cast<std::uint64_t>(out.cycles) * 3;
    out.server_requests = server_received(s.connect) - server_before;
    return out;
}

// W0: plain operations through one session, one after another: get_data of one node for half
// the time, then create (ephemeral) + delete of one node for the other half. The rate is the
// get_data one; create_delete_per_s the other. `op(kind)` runs one (0: get_data, 1: create +
// delete) and returns when it is done. With --reads-only, get_data alone for the whole time.
template <class Op>
result run_plain_ops(const settings& s, Op op) {
    result out;
    out.per_client = {0};
    const auto loop = [&](int kind, double seconds, std::vector<double>* lat) {
        long n = 0;
        const auto start = clk::now();
        for (const auto until = start + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(seconds)); clk::now() < until; ++n) {
            const auto t0 = now_ns();
            op(kind);
            if (lat) lat->push_back(static_cast<double>(now_ns() - t0) / 1000);
        }
        return std::pair(n, std::chrono::duration<double>(clk::now() - start).count());
    };
    const double read_share = s.reads_only ? 1.0 : 0.5;
    loop(0, s.warmup * read_share, nullptr);
    if (!s.reads_only) loop(1, s.warmup / 2, nullptr);
    const long server_before = server_received(s.connect);
    const double cpu_before = cpu_now();
    const heap_count heap_before_reads;
    const auto [reads, read_secs] = loop(0, s.seconds * read_share, &out.acquire_us);
    heap_before_reads.put(out, "read", reads);
    const double cpu_reads = cpu_now() - cpu_before;
    const long server_reads = server_received(s.connect) - server_before;
    out.cycles = reads;
    out.per_client[0] = reads;
    out.elapsed = read_secs;
    out.cpu_seconds = cpu_reads;
    out.requests = static_cast<std::uint64_t>(reads);
    out.server_requests = server_reads;
    if (s.reads_only) return out;
    std::vector<double> cycles_us;
    const heap_count heap_before_cycles;
    const auto [cycles, cycle_secs] = loop(1, s.seconds / 2, &cycles_us);
    heap_before_cycles.put(out, "create_delete", cycles);
    out.extra["create_delete_per_s"] = static_cast<double>(cycles) / cycle_secs;
    out.extra["create_delete_p50_us"] = pct(cycles_us, 0.5);
    return out;
}

result run_plain_zkr(const settings& s, const std::string& path) {
    auto sessions = open_sessions(s, 1);
    auto& c = *sessions[0];
    c.create(path, "x", {.create_parents = true});
    const auto node = path + "/n";
    return run_plain_ops(s, [&](int kind) {
        if (kind == 0) {
            (void)c.get_data(path);
        } else {
            c.create(node, "", {.mode = zkr::create_mode::ephemeral});
            c.remove(node);
        }
    });
}

result run_plain_raw(const settings& s, const std::string& path) {
    raw_client c(s.connect);
    c.make_path(path, "x");
    const auto node = path + "/n";
    return run_plain_ops(s, [&](int kind) {
        if (kind == 0) {
            c.pending = 1;
            zoo_aget(c.zh, path.c_str(), 0, raw_client::on_data, &c);
            c.wait_all();
        } else {
            c.pending = 1;
            zoo_acreate(c.zh, node.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, raw_client::on_string, &c);
            c.wait_all();
            c.pending = 1;
            zoo_adelete(c.zh, node.c_str(), -1, raw_client::on_void, &c);
            c.wait_all();
        }
    });
}

// W0 through a handle that a network thread owns (threaded_raw.hpp): what the C client alone
// costs with zkr's threads, and without the hop.
template <class Model>
result run_plain_threaded(const settings& s, const std::string& path, Model& model) {
    const auto node = path + "/n";
    const auto get = [&](zhandle_t* zh, lockbench::call_state* st) {
        zoo_aget(zh, path.c_str(), 0, lockbench::call_state::on_data, st);
    };
    const auto create = [&](zhandle_t* zh, lockbench::call_state* st) {
        zoo_acreate(zh, node.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, lockbench::call_state::on_string, st);
    };
    const auto remove = [&](zhandle_t* zh, lockbench::call_state* st) {
        zoo_adelete(zh, node.c_str(), -1, lockbench::call_state::on_void, st);
    };
    return run_plain_ops(s, [&](int kind) {
        if (kind == 0) {
            model.call(get);
        } else {
            model.call(create);
            model.call(remove);
        }
    });
}

result run_plain_hop(const settings& s, const std::string& path) {
    raw_client c(s.connect);
    c.make_path(path, "x");
    const auto spin = std::chrono::microseconds(s.blocking_call_spin_us >= 0 ? s.blocking_call_spin_us : 500);
    lockbench::hop_model model(c.zh, spin);
    return run_plain_threaded(s, path, model);
}

result run_plain_epoll(const settings& s, const std::string& path) {
    raw_client c(s.connect);
    c.make_path(path, "x");
    lockbench::shared_epoll_model model(c.zh);
    auto r = run_plain_threaded(s, path, model);
    r.extra["events_passed_on"] = static_cast<double>(model.passed_on());
    return r;
}

// Requests the server has received so far (the four-letter "srvr" command), counted the same way
// for every program the comparison runs.
long server_received(const std::string& connect) {
    const auto first = connect.substr(0, connect.find(','));
    const auto colon = first.rfind(':');
    const std::string reply = zkr::test::send_four_letter(std::stoi(first.substr(colon + 1)), "srvr", 1000ms);
    const auto at = reply.find("Received: ");
    return at == std::string::npos ? -1 : std::atol(reply.c_str() + at + 10);
}

long rss_kib() {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
    return 0;
}

// One client holding 1,000 lock objects, each holding its own lock.
result run_memory(const settings& s, const std::string& path) {
    auto sessions = open_sessions(s, 1);
    const long before = rss_kib();
    std::vector<std::unique_ptr<zkr::interprocess_mutex>> locks;
    for (int i = 0; i < 1000; ++i) {
        locks.push_back(std::make_unique<zkr::interprocess_mutex>(*sessions[0], path + "/l" + std::to_string(i)));
        locks.back()->acquire();
    }
    result out;
    out.extra["rss_kib_client"] = static_cast<double>(before);
    out.extra["rss_kib_with_1000_held"] = static_cast<double>(rss_kib());
    out.extra["kib_per_held_lock"] = static_cast<double>(rss_kib() - before) / 1000;
    for (auto& l : locks) l->release();
    return out;
}

// The server's notification latency: a delete on one session until the watch fires on another.
result run_notify(const settings& s, const std::string& path) {
    auto sessions = open_sessions(s, 2);
    auto& watcher = *sessions[0];
    auto& deleter = *sessions[1];
    result out;
    watcher.create(path, "", {.create_parents = true});
    std::vector<double> rtt;
    for (int i = 0; i < 400; ++i) {
        const auto node = path + "/n";
        deleter.create(node, "", {.mode = zkr::create_mode::ephemeral});
        std::promise<std::int64_t> fired;
        watcher.get_data(node, [&fired](const zkr::watch_event&) { fired.set_value(now_ns()); });
        const auto t0 = now_ns();
        deleter.remove(node);
        const auto t1 = now_ns();
        const auto at = fired.get_future().get();
        if (i >= 100) {  // after warm-up
            out.handoff_us.push_back(static_cast<double>(at - t0) / 1000);
            rtt.push_back(static_cast<double>(t1 - t0) / 1000);
        }
    }
    out.extra["delete_round_trip_p50_us"] = pct(rtt, 0.5);
    // A read's round trip, through zkr's sync API.
    std::vector<double> reads;
    for (int i = 0; i < 1000; ++i) {
        const auto t0 = now_ns();
        (void)watcher.exists(path);
        reads.push_back(static_cast<double>(now_ns() - t0) / 1000);
    }
    out.extra["read_round_trip_p50_us"] = pct(reads, 0.5);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    settings s;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
            return argv[++i];
        };
        try {
            if (a == "--connect") s.connect = value();
            else if (a == "--workload") s.workload = value();
            else if (a == "--clients") s.clients = std::stoi(value());
            else if (a == "--seconds") s.seconds = std::stod(value());
            else if (a == "--log-level") s.log_level = value();
            else if (a == "--json") s.json = true;
            else if (a == "--force-sync") s.force_sync = value() == "yes";
            else if (a == "--warmup") s.warmup = std::stod(value());
            else if (a == "--path") s.path = value();
            else if (a == "--blocking-call-spin-us") s.blocking_call_spin_us = std::stol(value());
            else if (a == "--observer") {
                const auto v = value();
                if (v != "none" && v != "counting") throw std::invalid_argument("--observer must be none or counting, got " + v);
                s.observer = v == "counting";
            }
            else if (a == "--cache-hold") s.cache_hold = true;
            else if (a == "--reads-only") s.reads_only = true;
            else if (a == "--release") {
                const auto v = value();
                if (v != "sync" && v != "async") throw std::invalid_argument("--release must be sync or async, got " + v);
                s.async_release = v == "async";
            }
            else throw std::invalid_argument("unknown option " + a);
        } catch (const std::exception& e) {
            std::cerr << "lockbench: " << e.what() << '\n';
            return 2;
        }
    }
    static const std::map<std::string, int> default_clients = {{"w1", 1}, {"w2", 8}, {"w3", 64}, {"w4", 8}, {"w5", 8}, {"w6", 8},
                                                                {"w7", 8}, {"w8", 8}, {"w0", 1}, {"raw0", 1}, {"raw0-hop", 1}, {"raw0-epoll", 1}, {"w9", 2}, {"w10", 2}, {"w10-leader", 1}, {"raw", 1}, {"mem", 1}, {"notify", 2}, {"cachewait", 2}};
    if (!default_clients.count(s.workload)) {
        std::cerr << "lockbench: --workload must be one of w0..w10, raw, raw0, raw0-hop, raw0-epoll, mem, notify, cachewait\n";
        return 2;
    }
    if (s.clients <= 0) s.clients = default_clients.at(s.workload);
    std::unique_ptr<zkr::test::zk_cluster> server;
    if (s.connect.empty()) {
        server = std::make_unique<zkr::test::zk_cluster>(
            zkr::test::cluster_options{.tick_ms = 500, .force_sync = s.force_sync, .fast_jvm_start = false});
        s.connect = server->connect_string();
    }
    const std::string path = "/lockbench/" + s.workload + "-" + std::to_string(::getpid());
    result r;
    try {
        if (s.workload == "w4") r = run_cycles<semaphore_recipe>(s, s.clients, path);
        else if (s.workload == "w5") r = run_cycles<semaphore_mutex_recipe>(s, s.clients, path);
        else if (s.workload == "w8" && s.async_release) r = run_cycles<read_write_async_release_recipe>(s, s.clients, path);
        else if (s.workload == "w8") r = run_cycles<read_write_recipe>(s, s.clients, path);
        else if (s.workload == "w7") r = run_deep_queue(s, path);
        else if (s.workload == "w0") r = run_plain_zkr(s, path);
        else if (s.workload == "raw0") r = run_plain_raw(s, path);
        else if (s.workload == "raw0-hop") r = run_plain_hop(s, path);
        else if (s.workload == "raw0-epoll") r = run_plain_epoll(s, path);
        else if (s.workload == "w9") r = run_failover(s, path);
        else if (s.workload == "w10") r = run_failover_after_kill(s, path);
        else if (s.workload == "w10-leader") lead_until_killed(s);
        else if (s.workload == "raw") r = run_raw(s, path);
        else if (s.workload == "mem") r = run_memory(s, path);
        else if (s.workload == "notify") r = run_notify(s, path);
        else if (s.workload == "cachewait" && s.cache_hold) r = run_cache_wait<mutex_cached_recipe>(s, path);
        else if (s.workload == "cachewait") r = run_cache_wait<mutex_recipe>(s, path);
        else if (s.cache_hold && s.async_release) throw std::invalid_argument("--cache-hold takes --release sync");
        else if (s.cache_hold) r = run_cycles<mutex_cached_recipe>(s, s.clients, path);
        else if (s.async_release) r = run_cycles<mutex_async_release_recipe>(s, s.clients, path);
        else r = run_cycles<mutex_recipe>(s, s.clients, path);
    } catch (const std::exception& e) {
        std::cerr << "lockbench: " << e.what() << '\n';
        return 1;
    }
    const double rate = r.elapsed > 0 ? static_cast<double>(r.cycles) / r.elapsed : 0;
    const double per_cycle = r.cycles ? static_cast<double>(r.requests) / static_cast<double>(r.cycles) : 0;
    const double server_per_cycle = r.cycles ? static_cast<double>(r.server_requests) / static_cast<double>(r.cycles) : 0;
    const double cpu_per_1000 = r.cycles ? r.cpu_seconds / static_cast<double>(r.cycles) * 1000 : 0;
    const long min_c = r.per_client.empty() ? 0 : *std::min_element(r.per_client.begin(), r.per_client.end());
    const long max_c = r.per_client.empty() ? 0 : *std::max_element(r.per_client.begin(), r.per_client.end());
    const double a50 = pct(r.acquire_us, 0.5), a99 = pct(r.acquire_us, 0.99);
    const double h50 = pct(r.handoff_us, 0.5), h99 = pct(r.handoff_us, 0.99);
    if (s.json) {
        std::ostringstream o;
        o << "{\"program\": \"zkr\", \"workload\": \"" << s.workload << "\", \"release\": \""
          << (s.async_release ? "async" : "sync") << "\", \"clients\": " << s.clients
          << ", \"seconds\": " << r.elapsed << ", \"cycles\": " << r.cycles << ", \"rate\": " << rate
          << ", \"acquire_p50_us\": " << a50 << ", \"acquire_p99_us\": " << a99 << ", \"handoff_p50_us\": " << h50
          << ", \"handoff_p99_us\": " << h99 << ", \"requests_per_cycle\": " << per_cycle << ", \"server_requests_per_cycle\": " << server_per_cycle
          << ", \"cpu_ms_per_1000_cycles\": " << cpu_per_1000 * 1000 << ", \"min_per_client\": " << min_c
          << ", \"max_per_client\": " << max_c;
        for (const auto& [k, v] : r.extra) o << ", \"" << k << "\": " << v;
        o << "}";
        std::cout << o.str() << '\n';
    } else {
        std::cout << "workload " << s.workload << ", " << s.clients << " session(s), " << r.elapsed << " s\n"
                  << "  cycles/s            " << static_cast<long>(rate) << '\n'
                  << "  acquire p50 / p99   " << static_cast<long>(a50) << " / " << static_cast<long>(a99) << " us\n"
                  << "  handoff p50 / p99   " << static_cast<long>(h50) << " / " << static_cast<long>(h99) << " us\n"
                  << "  requests/cycle      " << per_cycle << " (server count " << server_per_cycle << ")\n"
                  << "  CPU per 1000 cycles " << static_cast<long>(cpu_per_1000 * 1000) << " ms\n"
                  << "  per client          min " << min_c << ", max " << max_c << '\n';
        for (const auto& [k, v] : r.extra) std::cout << "  " << k << "  " << v << '\n';
    }
    return 0;
}
