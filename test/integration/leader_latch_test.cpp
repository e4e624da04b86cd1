// zkr::leader_latch against a real ZooKeeper: one leader at a time (separate processes too),
// epochs that rise, hand-over on close and on session expiry, listeners and stop tokens per term,
// and misuse.
#include "build_paths.hpp"
#include "recipe_checks.hpp"
#include "tcp_proxy.hpp"

#include <zkr/client.hpp>
#include <zkr/interprocess_mutex.hpp>
#include <zkr/leader_latch.hpp>

#include <boost/asio/use_future.hpp>

#include <future>

#include "zkr_catch.hpp"

#include <atomic>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using zkr::errc;

namespace {

using zkr::test::connect;
using zkr::test::nodes_under;

std::string latch_path(const std::string& name) { return zkr::test::recipe_path("latch-" + name); }

// What a participant's listener heard, in order.
struct heard {
    std::mutex m;
    std::vector<bool> events;
    void operator()(bool leader) {
        std::lock_guard l(m);
        events.push_back(leader);
    }
    std::vector<bool> get() {
        std::lock_guard l(m);
        return events;
    }
};

}  // namespace

TEST_CASE("leader latch: separate processes lead one at a time, epochs rise, each hands over when it leaves") {
    auto& zk = zkr::test::shared_server();
    const auto path = latch_path("procs");
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    constexpr int processes = 5;
    std::vector<zkr::test::child_process> workers;
    for (int i = 0; i < processes; ++i)
        workers.emplace_back(std::vector<std::string>{ZKR_LOCK_WORKER, zk.connect_string(), "latch", path, "1", "30", log, counter});
    for (auto& w : workers) CHECK(w.wait() == 0);
    const auto r = zkr::test::check_log(log);
    CHECK(r.acquisitions == processes);
    CHECK(r.max_concurrent == 1);
    CHECK(r.tokens_rise);
    CHECK(zkr::test::read_lines(counter).at(0) == std::to_string(processes));
    auto c = connect(zk.connect_string());
    CHECK(zkr::test::eventually([&] { return !c->exists(path); }, 15s));
    std::remove(log.c_str());
    std::remove(counter.c_str());
}

TEST_CASE("leader latch: one of three leads, close hands over to the next with a higher epoch, listeners and stop tokens follow the terms") {
    auto& zk = zkr::test::shared_server();
    const auto path = latch_path("three");
    std::vector<std::unique_ptr<zkr::client>> clients;
    std::vector<std::unique_ptr<zkr::leader_latch>> latches;
    std::vector<std::unique_ptr<heard>> ears(3);
    std::vector<zkr::state_subscription> subs;
    for (int i = 0; i < 3; ++i) {
        clients.push_back(connect(zk.connect_string()));
        latches.push_back(std::make_unique<zkr::leader_latch>(*clients.back(), path, "p" + std::to_string(i)));
        ears[i] = std::make_unique<heard>();
        subs.push_back(latches.back()->add_listener(std::ref(*ears[i])));
        latches.back()->start();
        // Join in a known order.
        REQUIRE(zkr::test::eventually([&] { return latches[0]->participants().size() == static_cast<std::size_t>(i + 1); }));
    }
    REQUIRE(latches[0]->await_leadership(10s));
    CHECK_FALSE(latches[1]->has_leadership());
    CHECK_FALSE(latches[2]->await_leadership(200ms));
    CHECK(latches[2]->participants() == std::vector<std::string>{"p0", "p1", "p2"});
    CHECK(latches[2]->leader() == "p0");
    CHECK_THROWS_AS(latches[1]->fencing_token(), zkr::error);
    CHECK(latches[1]->stop_token().stop_requested());
    const auto first_epoch = latches[0]->fencing_token();
    const auto first_term = latches[0]->stop_token();
    CHECK_FALSE(first_term.stop_requested());
    REQUIRE(zkr::test::eventually([&] { return ears[0]->get() == std::vector<bool>{true}; }));
    latches[0]->close();
    REQUIRE(latches[1]->await_leadership(10s));
    CHECK(latches[1]->fencing_token() > first_epoch);
    CHECK(zkr::test::eventually([&] { return first_term.stop_requested(); }));
    CHECK(zkr::test::eventually([&] { return ears[0]->get() == std::vector<bool>{true, false}; }));
    CHECK(zkr::test::eventually([&] { return ears[1]->get() == std::vector<bool>{true}; }));
    CHECK(ears[2]->get().empty());
    CHECK(latches[2]->leader() == "p1");
    latches[1]->close();
    REQUIRE(latches[2]->await_leadership(10s));
    latches[2]->close();
    CHECK(zkr::test::eventually([&] { return nodes_under(*clients[0], path) == 0; }));
}

TEST_CASE("leader latch: the leader's session expires: its term ends (false, stop requested), the next leads, and it queues again on its new session") {
    auto& zk = zkr::test::shared_server();
    const auto path = latch_path("expiry");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string());
    zkr::leader_latch first(*a, path, "a"), second(*b, path, "b");
    heard ears;
    auto sub = first.add_listener(std::ref(ears));
    first.start();
    REQUIRE(first.await_leadership(10s));
    second.start();
    REQUIRE(zkr::test::eventually([&] { return first.participants().size() == 2; }));
    const auto term = first.stop_token();
    const auto epoch = first.fencing_token();
    zkr::test::expire_session(zk.connect_string(), *a);
    REQUIRE(second.await_leadership(20s));
    CHECK(second.fencing_token() > epoch);
    CHECK(zkr::test::eventually([&] { return term.stop_requested(); }, 10s));
    CHECK(zkr::test::eventually([&] { return ears.get() == std::vector<bool>{true, false}; }, 10s));
    CHECK_FALSE(first.has_leadership());
    // It queued again behind the new leader, with a node of its new session.
    CHECK(zkr::test::eventually([&] { return second.participants() == std::vector<std::string>{"b", "a"}; }, 10s));
    second.close();
    REQUIRE(first.await_leadership(10s));
    CHECK(second.state() == zkr::hold_state::released);
    first.close();
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

TEST_CASE("leader latch: lose_on_doubt ends the term when the connection is suspended, and the latch leads again after") {
    auto& zk = zkr::test::shared_server();
    const auto path = latch_path("doubt");
    zkr::test::tcp_proxy proxy(zk.client_port(0));
    auto a = connect("127.0.0.1:" + std::to_string(proxy.port()), 4s);
    zkr::leader_latch latch(*a, path, "a", {.lose_on_doubt = true});
    heard ears;
    auto sub = latch.add_listener(std::ref(ears));
    latch.start();
    REQUIRE(latch.await_leadership(10s));
    const auto epoch = latch.fencing_token();
    proxy.blackhole(true);  // silence: the client suspends after 2/3 of the session timeout
    CHECK(zkr::test::eventually([&] { return ears.get() == std::vector<bool>{true, false}; }, 10s));
    CHECK_FALSE(latch.has_leadership());
    proxy.blackhole(false);
    REQUIRE(latch.await_leadership(20s));
    CHECK(latch.fencing_token() > epoch);  // a new term, a new epoch
    latch.close();
    auto c = connect(zk.connect_string());
    CHECK(zkr::test::eventually([&] { return nodes_under(*c, path) == 0; }, 10s));
}

TEST_CASE("leader latch misuse: started twice, closed twice or never started, awaited when closed, a mutex on its path") {
    auto& zk = zkr::test::shared_server();
    const auto path = latch_path("misuse");
    auto a = connect(zk.connect_string());
    zkr::leader_latch latch(*a, path);
    CHECK_THROWS_WITH(latch.close(), zkr::test::contains("never started"));
    CHECK_THROWS_WITH(latch.await_leadership(10ms), zkr::test::contains("before start()"));
    latch.start();
    CHECK_THROWS_WITH(latch.start(), zkr::test::contains("start() called twice"));
    REQUIRE(latch.await_leadership(10s));
    zkr::interprocess_mutex mutex(*a, path);
    CHECK_THROWS_WITH(mutex.try_lock(), zkr::test::contains("leader latch"));  // another kind: refused, named
    latch.close();
    CHECK_THROWS_WITH(latch.close(), zkr::test::contains("close() called twice"));
    CHECK_THROWS_WITH(latch.start(), zkr::test::contains("after close()"));
    try {
        latch.await_leadership(10ms);
        FAIL("await_leadership on a closed latch returned");
    } catch (const zkr::error& e) {
        CHECK(e.code() == errc::closed);
    }
    CHECK_THROWS_AS(latch.add_listener({}), zkr::error);
    CHECK_THROWS_AS(zkr::leader_latch(*a, "no-slash"), zkr::error);
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

TEST_CASE("leader latch: a latch waiting behind a mutex's nodes fails its election with lock_kind_mismatch, named") {
    auto& zk = zkr::test::shared_server();
    const auto path = latch_path("kinds");
    auto a = connect(zk.connect_string());
    zkr::interprocess_mutex mutex(*a, path);
    mutex.lock();
    zkr::leader_latch latch(*a, path);
    latch.start();
    try {
        latch.await_leadership(10s);
        FAIL("a latch led beside a mutex");
    } catch (const zkr::error& e) {
        CHECK(e.code() == errc::lock_kind_mismatch);
        CHECK_THAT(std::string(e.what()), zkr::test::contains("mutex"));
    }
    latch.close();
    mutex.unlock();
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));
}

namespace {

// Samples two participants every 2 ms while `during` runs: how often both read has_leadership().
int both_leading_while(const zkr::leader_latch& a, const zkr::leader_latch& b, const std::function<void()>& during) {
    std::atomic<bool> done{false};
    std::atomic<int> both{0};
    std::thread sampler([&] {
        while (!done) {
            if (a.has_leadership() && b.has_leadership()) ++both;
            std::this_thread::sleep_for(2ms);
        }
    });
    during();
    done = true;
    sampler.join();
    return both.load();
}

// The set-up of the double-leader regressions: `first` (its client behind a proxy the test can
// cut, with the given session timeout) leads, `second` (direct) is queued behind it.
struct proxied_election {
    zkr::test::tcp_proxy proxy;
    std::unique_ptr<zkr::client> a, b;
    zkr::leader_latch first, second;

    proxied_election(zkr::test::zk_cluster& zk, const std::string& path, std::chrono::milliseconds session)
        : proxy(zk.client_port(0)),
          a(connect("127.0.0.1:" + std::to_string(proxy.port()), session)),
          b(connect(zk.connect_string())),
          first(*a, path, "a"),
          second(*b, path, "b") {}

    // Called once the test's listeners are in place.
    void start_first_then_second() {
        first.start();
        REQUIRE(first.await_leadership(10s));
        second.start();
        REQUIRE(zkr::test::eventually([&] { return first.participants().size() == 2; }));
    }
};

}  // namespace

TEST_CASE("regression CURATOR-504/620/644: a leader's short disconnection keeps one leader, the same term and epoch, and the waiter never leads") {
    auto& zk = zkr::test::shared_server();
    proxied_election e(zk, latch_path("reconnect"), 6s);
    auto& proxy = e.proxy;
    auto& leader = e.first;
    auto& waiter = e.second;
    heard ears_a, ears_b;
    auto sub_a = leader.add_listener(std::ref(ears_a));
    auto sub_b = waiter.add_listener(std::ref(ears_b));
    e.start_first_then_second();
    const auto epoch = leader.fencing_token();
    const auto term = leader.stop_token();
    // Curator's LeaderLatch re-ran its election on RECONNECTED (reset(): a new node) and could
    // leave two leaders or none; zkr re-validates the same node on the same session.
    const int both = both_leading_while(leader, waiter, [&] {
        proxy.blackhole(true);  // shorter than the session: suspended, then reconnected
        CHECK(zkr::test::eventually([&] { return leader.state() == zkr::hold_state::doubtful; }, 10s));
        CHECK_FALSE(leader.has_leadership());  // in doubt, it does not claim to lead
        std::this_thread::sleep_for(1s);
        proxy.blackhole(false);
        CHECK(zkr::test::eventually([&] { return leader.has_leadership(); }, 10s));
        proxy.reset_all();  // a dropped connection, reconnected at once
        CHECK(zkr::test::eventually([&] { return leader.has_leadership(); }, 10s));
        std::this_thread::sleep_for(300ms);
    });
    CHECK(both == 0);
    CHECK(leader.fencing_token() == epoch);  // the same term: no new node, no new election
    CHECK_FALSE(term.stop_requested());
    CHECK(ears_a.get() == std::vector<bool>{true});  // listeners heard nothing of the doubt
    CHECK(ears_b.get().empty());
    CHECK(leader.participants() == std::vector<std::string>{"a", "b"});
    leader.close();
    REQUIRE(waiter.await_leadership(10s));
    waiter.close();
}

TEST_CASE("regression CURATOR-696: after its session is lost, a participant never leads on its old session's node") {
    auto& zk = zkr::test::shared_server();
    const auto path = latch_path("stale-node");
    proxied_election e(zk, path, 2s);
    auto& proxy = e.proxy;
    auto& a = e.a;
    auto& b = e.b;
    auto& first = e.first;
    auto& second = e.second;
    e.start_first_then_second();
    const auto old_epoch = first.fencing_token();
    const auto old_session = a->session_id();
    // Cut off past its session: the server ends it (b leads), a's client declares it lost and
    // opens a new session; the old session's node may still be listed when a lists again.
    const int both = both_leading_while(first, second, [&] {
        proxy.blackhole(true);
        REQUIRE(second.await_leadership(20s));
        proxy.blackhole(false);
        REQUIRE(zkr::test::eventually([&] { return a->session_id() != old_session && zkr::is_connected(a->state()); }, 20s));
        CHECK(zkr::test::eventually([&] { return first.participants() == std::vector<std::string>{"b", "a"}; }, 10s));
    });
    CHECK(both == 0);
    CHECK_FALSE(first.has_leadership());
    second.close();
    REQUIRE(first.await_leadership(10s));
    CHECK(first.fencing_token() > old_epoch);
    // Its term stands on a node of its current session.
    const auto nodes = zkr::test::connect(zk.connect_string())->get_children(path).children;
    REQUIRE(nodes.size() == 1);
    CHECK(b->get_data(path + "/" + nodes.front()).stat.ephemeral_owner == a->session_id());
    first.close();
}

// Issue 43 item 6: no async wait for leadership, as the locks have.
TEST_CASE("leader latch: async_await_leadership completes on leadership, on timeout with false, and with closed") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("latch-async", "election");
    auto a = zkr::test::connect(zk.connect_string()), b = zkr::test::connect(zk.connect_string());
    zkr::leader_latch never(*a, path + "-never");
    CHECK(never.async_await_leadership(std::chrono::seconds(1), boost::asio::use_future).wait_for(std::chrono::seconds(2)) ==
          std::future_status::ready);
    try {
        never.async_await_leadership(std::chrono::seconds(1), boost::asio::use_future).get();
        FAIL("awaited before start()");
    } catch (const boost::system::system_error& e) {
        CHECK(e.code() == zkr::errc::invalid_argument);
    }
    zkr::leader_latch first(*a, path, "a"), second(*b, path, "b");
    first.start();
    CHECK(first.async_await_leadership(std::chrono::seconds(10), boost::asio::use_future).get());
    second.start();
    CHECK_FALSE(second.async_await_leadership(std::chrono::milliseconds(300), boost::asio::use_future).get());  // timed out
    CHECK_FALSE(second.async_await_leadership(std::chrono::milliseconds(0), boost::asio::use_future).get());    // not now
    std::promise<std::pair<boost::system::error_code, bool>> heard;
    second.async_await_leadership(std::chrono::seconds(20), [&](boost::system::error_code ec, bool leading) {
        heard.set_value({ec, leading});  // on the callback thread
    });
    first.close();
    auto f = heard.get_future();
    REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    const auto [ec, leading] = f.get();
    CHECK_FALSE(ec);
    CHECK(leading);
    CHECK(second.has_leadership());
    // Waiting when closed: closed at once; a wait pending at close() completes with closed too.
    zkr::leader_latch third(*a, path, "c");
    third.start();
    auto pending = third.async_await_leadership(std::chrono::seconds(20), boost::asio::use_future);
    third.close();
    try {
        pending.get();
        FAIL("a wait pending at close() succeeded");
    } catch (const boost::system::system_error& e) {
        CHECK(e.code() == zkr::errc::closed);
    }
    second.close();
}
