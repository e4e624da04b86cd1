// interprocess_semaphore_v2, shared_count and interprocess_semaphore_mutex against a real
// ZooKeeper: separate sessions in this process, and separate processes (zkr_lock_worker).
#include "build_paths.hpp"
#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "recipe_checks.hpp"
#include "tcp_proxy.hpp"

#include <zkr/interprocess_semaphore_mutex.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>
#include <zkr/shared_count.hpp>

#include <boost/asio/use_future.hpp>

#include "zkr_catch.hpp"

#include <unistd.h>

#include <future>
#include <mutex>
#include <set>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;
using zkr::hold_state;
using zkr::test::check_log;
using zkr::test::connect;
using zkr::test::nodes_under;

namespace {

std::string sem_path(const std::string& name) { return zkr::test::recipe_path(name, "sem"); }

struct worker_run {
    zkr::test::log_check log;
    std::string path;
};

// Workers in separate processes; each waits for its lease(s), holds hold_ms, returns them.
worker_run run_workers(const std::string& name, const std::string& recipe, int processes, int iterations, int hold_ms,
                       std::string* counter_value = nullptr) {
    auto& zk = zkr::test::shared_server();
    const std::string path = sem_path(name);
    const std::string log = zkr::test::temp_file("log");
    const std::string counter = zkr::test::temp_file("counter");
    std::vector<zkr::test::child_process> workers;
    for (int i = 0; i < processes; ++i)
        workers.emplace_back(std::vector<std::string>{ZKR_LOCK_WORKER, zk.connect_string(), recipe, path,
                                                      std::to_string(iterations), std::to_string(hold_ms), log, counter});
    for (auto& w : workers) CHECK(w.wait() == 0);
    worker_run r{check_log(log), path};
    CHECK(r.log.acquisitions == processes * iterations);
    CHECK(r.log.tokens_unique);
    if (counter_value) *counter_value = zkr::test::read_lines(counter).at(0);
    // Every process is gone: no lease node is left, and the container parent goes too.
    auto c = connect(zk.connect_string());
    CHECK(zkr::test::eventually([&] { return !c->exists(path); }, 15s));
    std::remove(log.c_str());
    std::remove(counter.c_str());
    return r;
}

}  // namespace

TEST_CASE("semaphore: separate processes never hold more than max leases, and reach max") {
    const auto r = run_workers("procs", "semaphore:3:1", 6, 10, 30);
    CHECK(r.log.max_concurrent <= 3);
    CHECK(r.log.max_concurrent == 3);
}

TEST_CASE("semaphore: random qty across 10 processes never exceeds max") {
    const auto r = run_workers("random-qty", "semaphore:4:0", 10, 6, 10);
    CHECK(r.log.max_concurrent <= 4);
    CHECK(r.log.max_concurrent >= 3);
}

TEST_CASE("semaphore_mutex: separate processes, one holder at a time, tokens rise, no lost update") {
    std::string counter;
    const auto r = run_workers("procs-mutex", "semaphore_mutex", 4, 15, 1, &counter);
    CHECK(r.log.max_concurrent == 1);
    CHECK(r.log.tokens_rise);
    CHECK(counter == std::to_string(4 * 15));
}

TEST_CASE("semaphore: a timed acquire on a full semaphore returns empty in time and leaves no node") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("timed");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 sa(*a, path, 2), sb(*b, path, 2);
    auto held = sa.acquire_many(2);
    REQUIRE(held.size() == 2);
    CHECK(held[0].node_path() == held[1].node_path());  // one node carries both
    const auto start = clk::now();
    CHECK_FALSE(sb.acquire(300ms));
    const auto waited = clk::now() - start;
    CHECK(waited >= 300ms);
    CHECK(waited < 300ms + 2s);
    CHECK_FALSE(sb.acquire(0ms));  // tries once, never queues
    CHECK_FALSE(sb.acquire_many(1, 100ms));
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 1; }, 5s));
    // One lease of the pair returned frees nothing; the second returns the node.
    held[0].close();
    CHECK_FALSE(held[0].is_open());
    CHECK(nodes_under(*a, path) == 1);
    CHECK_FALSE(sb.acquire(0ms));
    held[1].close();
    auto got = sb.acquire_many(2, 5s);
    REQUIRE(got);
    CHECK(got->size() == 2);
}

TEST_CASE("semaphore: two clients each asking for qty = max both complete, one after the other") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("no-deadlock");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    auto c = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 sa(*a, path, 3), sb(*b, path, 3), sc(*c, path, 3);
    auto first = sc.acquire();  // both must queue
    std::mutex m;
    std::vector<std::string> events;
    auto take_all = [&](zkr::interprocess_semaphore_v2& s, const std::string& who) {
        auto all = s.acquire_many(3);
        {
            std::lock_guard l(m);
            events.push_back(who + " acquired " + std::to_string(all.size()));
        }
        std::this_thread::sleep_for(100ms);
        {
            std::lock_guard l(m);
            events.push_back(who + " releasing");
        }
        for (auto& x : all) x.close();
    };
    auto ta = std::async(std::launch::async, take_all, std::ref(sa), "a");
    REQUIRE(zkr::test::eventually([&] { return sa.participant_nodes().size() == 2; }));
    auto tb = std::async(std::launch::async, take_all, std::ref(sb), "b");
    REQUIRE(zkr::test::eventually([&] { return sa.participant_nodes().size() == 3; }));
    CHECK(ta.wait_for(200ms) == std::future_status::timeout);
    first.close();
    REQUIRE(ta.wait_for(10s) == std::future_status::ready);
    REQUIRE(tb.wait_for(10s) == std::future_status::ready);
    ta.get();
    tb.get();
    CHECK(events == std::vector<std::string>{"a acquired 3", "a releasing", "b acquired 3", "b releasing"});
    CHECK(nodes_under(*a, path) == 0);
}

TEST_CASE("semaphore: waiters are served in arrival order, a small later request does not overtake") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("fifo");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    auto c = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 sa(*a, path, 2), sb(*b, path, 2), sc(*c, path, 2);
    auto one = sa.acquire();
    auto big = std::async(std::launch::async, [&] { return sb.acquire_many(2); });
    REQUIRE(zkr::test::eventually([&] { return sa.participant_nodes().size() == 2; }));
    // One lease is free, but b asked first for two: c waits behind b.
    CHECK_FALSE(sc.acquire_many(1, 500ms));
    auto small = std::async(std::launch::async, [&] { return sc.acquire(); });
    REQUIRE(zkr::test::eventually([&] { return sa.participant_nodes().size() == 3; }));
    CHECK(small.wait_for(300ms) == std::future_status::timeout);
    one.close();
    REQUIRE(big.wait_for(10s) == std::future_status::ready);
    auto b_leases = big.get();
    CHECK(small.wait_for(300ms) == std::future_status::timeout);  // b holds both
    for (auto& l : b_leases) l.close();
    REQUIRE(small.wait_for(10s) == std::future_status::ready);
    auto c_lease = small.get();
    CHECK(c_lease.is_valid());
}

TEST_CASE("semaphore: a release wakes only the first waiter, never a herd") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("herd");
    constexpr int waiters = 5;
    auto h1 = connect(zk.connect_string());
    auto h2 = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 s1(*h1, path, 2), s2(*h2, path, 2);
    auto l1 = s1.acquire();
    auto l2 = s2.acquire();
    std::vector<std::unique_ptr<zkr::client>> clients;
    std::vector<std::unique_ptr<zkr::interprocess_semaphore_v2>> sems;
    std::vector<std::future<zkr::lease>> pending;
    for (int i = 0; i < waiters; ++i) {
        clients.push_back(connect(zk.connect_string()));
        sems.push_back(std::make_unique<zkr::interprocess_semaphore_v2>(*clients.back(), path, 2));
        pending.push_back(std::async(std::launch::async, [s = sems.back().get()] { return s->acquire(); }));
        REQUIRE(zkr::test::eventually([&] { return s1.participant_nodes().size() == 3u + i; }));
    }
    std::this_thread::sleep_for(300ms);  // every waiter has set its watches
    std::vector<std::uint64_t> before;
    for (auto& c : clients) before.push_back(zkr::detail::requests_sent(zkr::detail::connection_of(*c)));
    l1.close();
    REQUIRE(pending[0].wait_for(10s) == std::future_status::ready);
    std::this_thread::sleep_for(300ms);  // let any herd show itself
    // Waiters 3.. did not hear of the release: they sent nothing.
    for (int i = 2; i < waiters; ++i) CHECK(zkr::detail::requests_sent(zkr::detail::connection_of(*clients[i])) == before[i]);
    // The first waiter held without asking: its predecessor's deletion proved it.
    CHECK(zkr::detail::requests_sent(zkr::detail::connection_of(*clients[0])) - before[0] <= 2);  // touch (grant signal) + own watch
    auto w0 = pending[0].get();
    // Everyone gets through in turn.
    l2.close();
    w0.close();
    for (int i = 1; i < waiters; ++i) {
        REQUIRE(pending[i].wait_for(10s) == std::future_status::ready);
        pending[i].get().close();
    }
    CHECK(zkr::test::eventually([&] { return nodes_under(*h1, path) == 0; }, 5s));
}

TEST_CASE("semaphore of one lease: leases closed inside their completion handlers drain a queue, a delete and a listing per handoff") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("one-lease-drain");
    constexpr int sessions = 4, waiters = 20;
    std::vector<std::unique_ptr<zkr::client>> clients;
    std::vector<std::unique_ptr<zkr::interprocess_semaphore_v2>> sems;
    for (int i = 0; i < sessions; ++i) {
        clients.push_back(connect(zk.connect_string()));
        sems.push_back(std::make_unique<zkr::interprocess_semaphore_v2>(*clients.back(), path, 1));
    }
    auto gate = sems[0]->acquire();
    std::atomic<int> granted{0}, failed{0}, answered{0};
    std::promise<void> drained;
    for (int w = 0; w < waiters; ++w) {
        sems[static_cast<std::size_t>(w % sessions)]->async_acquire(1, [&](boost::system::error_code ec, std::vector<zkr::lease> leases) {
            if (ec || leases.size() != 1) ++failed;
            else {
                ++granted;
                leases.front().close();  // a blocking release on the callback thread
            }
            if (++answered == waiters) drained.set_value();
        });
    }
    REQUIRE(zkr::test::eventually([&] { return sems[0]->participant_nodes().size() == waiters + 1u; }, 10s));
    std::this_thread::sleep_for(300ms);  // every waiter has set its watches
    auto sent = [&] {
        std::uint64_t n = 0;
        for (auto& c : clients) n += zkr::detail::requests_sent(zkr::detail::connection_of(*c));
        return n;
    };
    const auto before = sent();
    gate.close();
    REQUIRE(drained.get_future().wait_for(20s) == std::future_status::ready);
    CHECK(granted == waiters);
    CHECK(failed == 0);
    // One delete per release, and at most one listing per waiter: a waiter whose view still lists
    // nodes ahead of its predecessor lists once when it goes (issue 43: a data change can no
    // longer tell it that the predecessor held). No herd: nobody lists more than once.
    CHECK(sent() - before <= 2u * waiters);
    CHECK(sent() - before >= waiters + 1u);
    CHECK(zkr::test::eventually([&] { return nodes_under(*clients[0], path) == 0; }, 5s));
}

TEST_CASE("semaphore of one lease: someone else writes to a held lease node: the lease stands, the waiter behind waits") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("one-lease-tamper");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 holder(*a, path, 1), waiter(*b, path, 1);
    auto held = holder.acquire();
    auto next = std::async(std::launch::async, [&] { return waiter.acquire(); });
    REQUIRE(zkr::test::eventually([&] { return holder.participant_nodes().size() == 2; }));
    std::this_thread::sleep_for(300ms);  // past the own-node watch delay
    b->set_data(held.node_path(), "tampered");
    CHECK(next.wait_for(700ms) == std::future_status::timeout);  // a write is no release
    CHECK(held.state() == hold_state::held);
    held.close();
    REQUIRE(next.wait_for(10s) == std::future_status::ready);
    auto second = next.get();
    CHECK(second.is_valid());
    second.close();
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }, 5s));
}

TEST_CASE("semaphore: one round trip to acquire uncontended, one to return") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("round-trips");
    auto a = connect(zk.connect_string());
    zkr::test::plain_folder(*a, path);  // (never reaped: see plain_folder)
    zkr::interprocess_semaphore_v2 s(*a, path, 3);
    const auto before = zkr::detail::requests_sent(zkr::detail::connection_of(*a));
    auto l = s.acquire();
    const auto acquire_requests = zkr::detail::requests_sent(zkr::detail::connection_of(*a)) - before;
    l.close();
    const auto total = zkr::detail::requests_sent(zkr::detail::connection_of(*a)) - before;
    // create + getChildren, pipelined (one round trip), then the delete: Curator needs 5 + 1.
    CHECK(acquire_requests == 2);
    CHECK(total == 3);
}

TEST_CASE("semaphore: raising the shared count wakes a waiter") {
    auto& zk = zkr::test::shared_server();
    const auto base = zkr::join_path("/", zkr::test::unique_namespace("shared-count"));
    const auto path = zkr::join_path(base, "sem");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::shared_count ca(*a, base + "/max", 1), cb(*b, base + "/max", 5);  // the second finds it: 1
    CHECK(cb.count() == 1);
    std::promise<std::int32_t> heard;
    std::once_flag once;
    auto sub = cb.add_listener([&](std::int32_t v) { std::call_once(once, [&] { heard.set_value(v); }); });
    zkr::interprocess_semaphore_v2 sa(*a, path, ca), sb(*b, path, cb);
    CHECK(sb.max_leases() == 1);
    auto held = sa.acquire();
    auto waiter = std::async(std::launch::async, [&] { return sb.acquire(10s); });
    REQUIRE(zkr::test::eventually([&] { return sa.participant_nodes().size() == 2; }));
    CHECK(waiter.wait_for(200ms) == std::future_status::timeout);
    CHECK_THROWS_AS(sb.acquire_many(2), zkr::error);  // qty above the maximum in force
    const auto raised_at = clk::now();
    ca.set_count(2);
    REQUIRE(waiter.wait_for(5s) == std::future_status::ready);
    auto got = waiter.get();
    REQUIRE(got);
    CHECK(clk::now() - raised_at < 2s);
    CHECK(held.is_valid());
    CHECK(got->is_valid());
    auto v = heard.get_future();
    REQUIRE(v.wait_for(5s) == std::future_status::ready);
    CHECK(v.get() == 2);
    CHECK(sb.max_leases() == 2);
    CHECK_FALSE(cb.try_set_count(1, 7));  // it is 2 now
    CHECK(cb.try_set_count(2, 3));
    CHECK(zkr::test::eventually([&] { return ca.count() == 3; }));
}

// Seed 6006018025 of the simulation, against a real server and a separate process: A's node is
// first, but A has not decided yet (its replies are lost on the wire); B, behind it in another
// process, fits the count of 2; the count then shrinks to 1, and A decides under it. Before grants
// under a shared count were marked, B held at once and A held too: 2 leases under a count of 1.
// Now B holds only once A has marked its grant, and then 2 exceed 1: it waits for A's release.
// Seed 28548085651 on the same stage: an operator writes into A's node before the shrink. A write
// is no grant: B, which took it for A's mark, held under the count of 2 and stayed beside A.
TEST_CASE("semaphore: a shared count that shrinks while a waiter ahead has not decided never lets both hold, a write into its node neither") {
    auto& zk = zkr::test::shared_server();
    const auto base = zkr::join_path("/", zkr::test::unique_namespace("shrink"));
    const auto path = zkr::join_path(base, "sem"), count_path = base + "/max";
    zkr::test::tcp_proxy proxy(zk.client_port(0));
    auto a = connect("127.0.0.1:" + std::to_string(proxy.port()), 10s);
    auto direct = connect(zk.connect_string());
    zkr::shared_count count(*direct, count_path, 2), a_count(*a, count_path, 2);
    REQUIRE(zkr::test::eventually([&] { return a_count.count() == 2; }));
    zkr::interprocess_semaphore_v2 sa(*a, path, a_count);
    direct->create(path, "", {.mode = zkr::create_mode::container});  // A's create lands at once (no "no node" round)
    proxy.drop_replies(true);  // A's create and listing reach the server; their replies never come back
    auto a_lease = std::async(std::launch::async, [&] { return sa.acquire(30s); });
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*direct, path) == 1; }, 5s));
    const auto a_node = zkr::join_path(path, direct->get_children(path).children.front());
    const std::string log = zkr::test::temp_file("log");
    zkr::test::child_process b({ZKR_LOCK_WORKER, zk.connect_string(), "shared_semaphore:" + count_path, path, "1", "200",
                                log, zkr::test::temp_file("counter")});
    REQUIRE(zkr::test::eventually([&] { return nodes_under(*direct, path) == 2; }, 10s));
    std::this_thread::sleep_for(1s);  // B has listed and decided (a fixed count of 2 would let it hold)
    const auto acquired = [&] {
        const auto lines = zkr::test::read_lines(log);
        return std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("ACQ", 0) == 0; });
    };
    CHECK(acquired() == 0);  // A, ahead of it, has not said it holds
    direct->set_data(a_node, "operator");  // a write, not A's grant mark
    std::this_thread::sleep_for(500ms);
    CHECK(acquired() == 0);
    count.set_count(1);
    // B reads the count through its watch: a grant decided before the notification arrives uses the
    // old count (recipes.md says so). Give it time to arrive before A can decide and mark.
    std::this_thread::sleep_for(500ms);
    proxy.reset_all();  // A reconnects on its session, finds its node, and decides under a count of 1
    proxy.drop_replies(false);
    REQUIRE(a_lease.wait_for(20s) == std::future_status::ready);
    auto lease = a_lease.get();
    REQUIRE(lease);
    CHECK(lease->is_valid());
    std::this_thread::sleep_for(1s);
    CHECK(acquired() == 0);  // 2 leases would exceed the count of 1: B waits for A's release
    lease->close();
    CHECK(b.wait_for(20s) == 0);
    CHECK(acquired() == 1);
    CHECK(zkr::test::eventually([&] { return !direct->exists(path); }, 15s));
    std::remove(log.c_str());
}

TEST_CASE("semaphore: closing a client frees its leases") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("close-frees");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 sb(*b, path, 2);
    {
        zkr::interprocess_semaphore_v2 sa(*a, path, 2);
        auto leases = sa.acquire_many(2);
        CHECK_FALSE(sb.acquire(0ms));
        a->close();
        CHECK(leases[0].state() == hold_state::lost);
    }  // the leases' destructors find the client closed: nothing to do, nothing thrown
    auto got = sb.acquire_many(2, 5s);
    REQUIRE(got);
    CHECK(got->size() == 2);
}

TEST_CASE("semaphore: a waiter's node deleted by hand: it queues again and leaves nothing behind") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("deleted-waiter");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    auto admin = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 sa(*a, path, 1), sb(*b, path, 1);
    auto held = sa.acquire();
    auto waiter = std::async(std::launch::async, [&] {
        auto l = sb.acquire();
        const bool valid = l.is_valid();
        l.close();
        return valid;
    });
    REQUIRE(zkr::test::eventually([&] { return sa.participant_nodes().size() == 2; }));
    const auto first = sa.participant_nodes().at(1);
    admin->remove(first);
    REQUIRE(zkr::test::eventually([&] {
        auto p = sa.participant_nodes();
        return p.size() == 2 && p[1] != first;
    }));
    held.close();
    REQUIRE(waiter.wait_for(10s) == std::future_status::ready);
    CHECK(waiter.get());
    CHECK(zkr::test::eventually([&] { return nodes_under(*admin, path) == 0; }, 5s));
}

TEST_CASE("semaphore: server restarted within the session timeout: leases are kept") {
    zkr::test::zk_cluster zk;
    const std::string path = "/restart/sem";
    auto a = connect(zk.connect_string(), 8s);
    auto b = connect(zk.connect_string(), 8s);
    zkr::interprocess_semaphore_v2 sa(*a, path, 2), sb(*b, path, 2);
    auto held = sa.acquire_many(2);
    const auto token = held[0].fencing_token();
    auto waiter = std::async(std::launch::async, [&] { return sb.acquire(); });
    REQUIRE(zkr::test::eventually([&] { return sa.participant_nodes().size() == 2; }));
    zk.stop(0);
    REQUIRE(zkr::test::eventually([&] { return held[0].state() == hold_state::doubtful; }));
    zk.start(0);
    REQUIRE(zkr::test::eventually([&] { return held[0].state() == hold_state::held; }, 15s));
    CHECK(held[1].state() == hold_state::held);
    CHECK(held[0].fencing_token() == token);
    CHECK(waiter.wait_for(300ms) == std::future_status::timeout);
    held.clear();  // the destructors return both
    REQUIRE(waiter.wait_for(10s) == std::future_status::ready);
    auto got = waiter.get();
    CHECK(got.fencing_token() > token);
    got.close();
    CHECK(nodes_under(*a, path) == 0);
}

TEST_CASE("semaphore: a holder's session expires: its loss is reported and the lease goes to the next waiter") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("expiry");
    auto a = connect(zk.connect_string(), 2s);
    auto b = connect(zk.connect_string(), 2s);
    zkr::interprocess_semaphore_v2 sa(*a, path, 1), sb(*b, path, 1);
    std::promise<void> lost;
    std::once_flag once;
    auto sub = sa.add_hold_listener([&](hold_state s) {
        if (s == hold_state::lost) std::call_once(once, [&] { lost.set_value(); });
    });
    auto held = sa.acquire();
    const auto token = held.fencing_token();
    auto waiter = std::async(std::launch::async, [&] { return sb.acquire(); });
    REQUIRE(zkr::test::eventually([&] { return sa.participant_nodes().size() == 2; }));
    zkr::test::expire_session(zk.connect_string(), *a);
    REQUIRE(lost.get_future().wait_for(10s) == std::future_status::ready);
    CHECK(held.state() == hold_state::lost);
    REQUIRE(waiter.wait_for(10s) == std::future_status::ready);
    auto next = waiter.get();
    CHECK(next.fencing_token() > token);
    // The old holder's guarded write cannot commit; its close says the lease had been lost.
    try {
        held.guarded_multi({zkr::multi_op::create(path + "-stale", "x")});
        FAIL("a guarded write of a lost lease committed");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::lock_lost);
    }
    CHECK_FALSE(b->exists(path + "-stale"));
    boost::system::error_code ec;
    held.close(ec);
    CHECK(ec == zkr::errc::lock_lost);
    next.close();
}

TEST_CASE("semaphore: participants that disagree on the maximum are refused, with the node named") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("mismatch");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 sa(*a, path, 2), sb(*b, path, 3);
    auto held = sa.acquire();
    try {
        (void)sb.acquire(1s);
        FAIL("an acquire with another maximum was not refused");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::max_mismatch);
        const std::string what = e.what();
        CHECK_THAT(what, zkr::test::contains("max_leases 3") && zkr::test::contains("max_leases 2") &&
                             zkr::test::contains(held.node_name()));
    }
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 1; }, 5s));  // b's node went
    held.close();
    // With a's node gone b may go ahead; a now meets b's node and is refused in turn.
    auto b_lease = sb.acquire(1s);
    REQUIRE(b_lease);
    CHECK_THROWS_AS(sa.acquire(1s), zkr::error);
}

TEST_CASE("semaphore: bad maximum, qty and timeout are rejected at once") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("bad-input");
    auto a = connect(zk.connect_string());
    const auto sent = zkr::detail::requests_sent(zkr::detail::connection_of(*a));
    auto code_of = [](auto&& fn) {
        try {
            fn();
        } catch (const zkr::error& e) {
            return e.code();
        }
        return boost::system::error_code{};
    };
    CHECK(code_of([&] { zkr::interprocess_semaphore_v2 s(*a, path, 0); }) == zkr::errc::invalid_argument);
    CHECK(code_of([&] { zkr::interprocess_semaphore_v2 s(*a, path, -3); }) == zkr::errc::invalid_argument);
    CHECK(code_of([&] { zkr::interprocess_semaphore_v2 s(*a, "no-slash", 2); }) == zkr::errc::invalid_path);
    CHECK(code_of([&] { zkr::interprocess_semaphore_v2 s(*a, "/", 2); }) == zkr::errc::invalid_path);
    zkr::interprocess_semaphore_v2 s(*a, path, 2);
    CHECK(code_of([&] { (void)s.acquire_many(0); }) == zkr::errc::invalid_argument);
    CHECK(code_of([&] { (void)s.acquire_many(-1); }) == zkr::errc::invalid_argument);
    CHECK(code_of([&] { (void)s.acquire_many(3); }) == zkr::errc::invalid_argument);
    CHECK(code_of([&] { (void)s.acquire(-5ms); }) == zkr::errc::invalid_argument);
    CHECK(code_of([&] { (void)s.acquire_many(1, -1ms); }) == zkr::errc::invalid_argument);
    CHECK(code_of([&] { s.async_acquire(3, [](boost::system::error_code, std::vector<zkr::lease>) {}); }) ==
          zkr::errc::invalid_argument);
    CHECK(zkr::detail::requests_sent(zkr::detail::connection_of(*a)) == sent);  // nothing was sent
    try {
        (void)s.acquire_many(3);
    } catch (const zkr::error& e) {
        CHECK_THAT(std::string(e.what()), zkr::test::contains("qty 3 is more than the semaphore's max_leases 2"));
    }
    // A closed lease says so.
    auto l = s.acquire();
    l.close();
    CHECK(code_of([&] { l.close(); }) == zkr::errc::lock_not_held);
    CHECK(code_of([&] { (void)l.fencing_token(); }) == zkr::errc::lock_not_held);
    CHECK(code_of([&] { zkr::shared_count c(*a, path + "-count", 1); a->set_data(path + "-count", "many"); zkr::shared_count d(*a, path + "-count", 1); }) ==
          zkr::errc::invalid_argument);
}

TEST_CASE("semaphore: async_acquire with a callback and use_future, leases move and return") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("async");
    auto a = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 s(*a, path, 3);
    std::promise<std::pair<boost::system::error_code, std::size_t>> done;
    std::vector<zkr::lease> kept;
    s.async_acquire(2, 5s, [&](boost::system::error_code ec, std::vector<zkr::lease> leases) {
        const auto n = leases.size();
        kept = std::move(leases);
        done.set_value({ec, n});
    });
    auto [ec, n] = done.get_future().get();
    CHECK_FALSE(ec);
    CHECK(n == 2);
    auto f = s.async_acquire(2, 200ms, boost::asio::use_future);  // only one is free
    CHECK(f.get().empty());                                        // timed out
    auto g = s.async_acquire(1, boost::asio::use_future);
    auto one = g.get();
    REQUIRE(one.size() == 1);
    zkr::lease moved = std::move(one[0]);
    CHECK_FALSE(one[0].is_open());
    CHECK(moved.is_valid());
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    CHECK(moved.data() == std::string(host) + ":" + std::to_string(::getpid()));  // the documented default
    kept.clear();
    moved = s.acquire();  // the move-assignment returns the lease it held
    CHECK(zkr::test::eventually([&] { return s.participant_nodes().size() == 1; }));
}

TEST_CASE("semaphore: async_close returns the lease at once, its next acquire queues behind the delete") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("async-close");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::interprocess_semaphore_v2 s(*a, path, 1);
    zkr::interprocess_semaphore_v2 other(*b, path, 1);

    auto l = s.acquire();
    auto closed = l.async_close(boost::asio::use_future);
    CHECK_FALSE(l.is_open());  // at once, before the delete's outcome
    REQUIRE(closed.wait_for(10s) == std::future_status::ready);
    CHECK_NOTHROW(closed.get());
    auto taken = other.acquire_many(1, 0ms);  // the delete is done: another session takes it at once
    REQUIRE(taken);
    CHECK(taken->size() == 1);
    taken.reset();

    // Return and acquire again without waiting: a try-once acquire, which never queues, finds the
    // lease free each time, since one session's requests reach the server in order.
    std::vector<std::future<void>> outcomes;
    std::set<std::int64_t> tokens;
    for (int i = 0; i < 30; ++i) {
        auto got = s.acquire_many(1, 0ms);
        REQUIRE(got);
        REQUIRE(got->size() == 1);
        tokens.insert((*got)[0].fencing_token());
        outcomes.push_back((*got)[0].async_close(boost::asio::use_future));
    }
    for (auto& f : outcomes) {
        REQUIRE(f.wait_for(10s) == std::future_status::ready);
        CHECK_NOTHROW(f.get());
    }
    CHECK(tokens.size() == 30);

    // The leases of one acquire share a node: only the last close sends its delete.
    zkr::interprocess_semaphore_v2 three(*a, sem_path("async-close-3"), 3);
    auto leases = three.acquire_many(2);
    const auto sent = zkr::detail::requests_sent(zkr::detail::connection_of(*a));
    CHECK_NOTHROW(leases[0].async_close(boost::asio::use_future).get());
    CHECK(zkr::detail::requests_sent(zkr::detail::connection_of(*a)) == sent);
    CHECK(three.participant_nodes().size() == 1);
    std::promise<boost::system::error_code> last;
    leases[1].async_close([&](boost::system::error_code ec) { last.set_value(ec); });
    CHECK_FALSE(last.get_future().get());
    CHECK(three.participant_nodes().empty());

    // Misuse: closing a closed lease is heard as lock_not_held through the handler; nothing is sent.
    std::promise<boost::system::error_code> misuse;
    const auto before_misuse = zkr::detail::requests_sent(zkr::detail::connection_of(*a));
    leases[1].async_close([&](boost::system::error_code ec) { misuse.set_value(ec); });
    CHECK(misuse.get_future().get() == zkr::errc::lock_not_held);
    CHECK(zkr::detail::requests_sent(zkr::detail::connection_of(*a)) == before_misuse);
    CHECK(nodes_under(*b, path) == 0);
}

TEST_CASE("semaphore_mutex: not re-entrant, and released from another thread") {
    auto& zk = zkr::test::shared_server();
    const auto path = sem_path("semaphore-mutex");
    auto a = connect(zk.connect_string());
    auto b = connect(zk.connect_string());
    zkr::interprocess_semaphore_mutex ma(*a, path), mb(*b, path);
    CHECK_FALSE(ma.is_held());
    std::unique_lock lock(ma);  // Lockable
    CHECK(ma.is_held());
    CHECK(ma.is_valid());
    const auto token = ma.fencing_token();
    // A second acquire by the same thread waits behind the first: it times out.
    const auto start = clk::now();
    CHECK_FALSE(ma.acquire(300ms));
    CHECK(clk::now() - start >= 300ms);
    CHECK_FALSE(mb.try_lock());
    // Another thread releases it.
    std::thread([&] { lock.unlock(); }).join();
    CHECK_FALSE(ma.is_held());
    CHECK(mb.try_lock_for(5s));
    CHECK(mb.fencing_token() > token);
    boost::system::error_code ec;
    ma.release(ec);
    CHECK(ec == zkr::errc::lock_not_held);
    CHECK_THROWS_AS(ma.release(), zkr::error);
    mb.unlock();
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }, 5s));
}
