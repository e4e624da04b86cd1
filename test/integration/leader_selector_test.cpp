// zkr::leader_selector against a real ZooKeeper: take_leadership runs in one participant at a time
// (separate processes too), on a thread of its own, with epochs that rise; its token stops on
// session expiry, on doubt with lose_on_doubt, on interrupt and close; a throwing take_leadership
// ends its term cleanly; requeue; misuse.
#include "build_paths.hpp"
#include "recipe_checks.hpp"
#include "tcp_proxy.hpp"

#include <zkr/client.hpp>
#include <zkr/leader_latch.hpp>
#include <zkr/leader_selector.hpp>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "zkr_catch.hpp"

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

using namespace std::chrono_literals;
using zkr::errc;

namespace {

using zkr::test::connect;
using zkr::test::nodes_under;

std::string selector_path(const std::string& name) { return zkr::test::recipe_path("selector-" + name); }

// What the participants' terms did: how many ran at once, and each term's epoch in order.
struct terms {
    std::mutex m;
    int running = 0, most_at_once = 0;
    std::vector<std::pair<std::string, std::int64_t>> started;  // (id, epoch)
    std::vector<std::thread::id> threads;

    void begin(const std::string& id, std::int64_t epoch) {
        std::lock_guard l(m);
        most_at_once = std::max(most_at_once, ++running);
        started.emplace_back(id, epoch);
        threads.push_back(std::this_thread::get_id());
    }
    void end() {
        std::lock_guard l(m);
        --running;
    }
    std::size_t count() {
        std::lock_guard l(m);
        return started.size();
    }
};

// A take_leadership that holds for `hold` (or until its stop), recording its term.
std::function<void(std::stop_token)> hold_for(terms& t, zkr::leader_selector*& self, std::chrono::milliseconds hold) {
    return [&t, &self, hold](std::stop_token stop) {
        t.begin(self->id(), self->fencing_token());
        const auto until = std::chrono::steady_clock::now() + hold;
        while (!stop.stop_requested() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
        t.end();
    };
}

}  // namespace

TEST_CASE("leader selector: three participants with requeue take turns, one at a time, each on a thread of its own, epochs rising") {
    auto& zk = zkr::test::shared_server();
    const auto path = selector_path("turns");
    terms t;
    std::vector<std::unique_ptr<zkr::client>> clients;
    std::vector<zkr::leader_selector*> selves(3);
    std::vector<std::unique_ptr<zkr::leader_selector>> selectors;
    for (int i = 0; i < 3; ++i) {
        clients.push_back(connect(zk.connect_string()));
        selectors.push_back(std::make_unique<zkr::leader_selector>(*clients.back(), path, hold_for(t, selves[i], 30ms),
                                                                   "p" + std::to_string(i), zkr::leader_selector::options{.requeue = true}));
        selves[i] = selectors.back().get();
    }
    for (auto& s : selectors) s->start();
    REQUIRE(zkr::test::eventually([&] { return t.count() >= 9; }, 20s));
    for (auto& s : selectors) s->close();
    selectors.clear();  // waits for a running term to return
    std::lock_guard l(t.m);
    CHECK(t.most_at_once == 1);
    CHECK(t.running == 0);
    for (std::size_t i = 1; i < t.started.size(); ++i) CHECK(t.started[i].second > t.started[i - 1].second);
    std::set<std::string> ids;
    for (const auto& [id, epoch] : t.started) ids.insert(id);
    CHECK(ids.size() == 3);  // every participant led
    for (const auto& th : t.threads) CHECK(th != std::this_thread::get_id());
    CHECK(zkr::test::eventually([&] { return nodes_under(*clients[0], path) == 0; }));
}

TEST_CASE("leader selector: separate processes lead one at a time, epochs rise, each hands over when take_leadership returns") {
    auto& zk = zkr::test::shared_server();
    const auto path = selector_path("procs");
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    constexpr int processes = 4;
    std::vector<zkr::test::child_process> workers;
    for (int i = 0; i < processes; ++i)
        workers.emplace_back(std::vector<std::string>{ZKR_LOCK_WORKER, zk.connect_string(), "selector", path, "1", "30", log, counter});
    for (auto& w : workers) CHECK(w.wait_for(60s) == 0);
    const auto r = zkr::test::check_log(log);
    CHECK(r.acquisitions == processes);
    CHECK(r.max_concurrent == 1);
    CHECK(r.tokens_rise);
    CHECK(zkr::test::read_lines(counter).at(0) == std::to_string(processes));
    auto c = connect(zk.connect_string());
    CHECK(zkr::test::eventually([&] { return !c->exists(path) || nodes_under(*c, path) == 0; }, 15s));
    std::remove(log.c_str());
    std::remove(counter.c_str());
}

TEST_CASE("leader selector: the leader's session expires: its token stops, the next leads with a higher epoch, it requeues on its new session") {
    auto& zk = zkr::test::shared_server();
    const auto path = selector_path("expiry");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string());
    terms t;
    zkr::leader_selector* self_a = nullptr;
    zkr::leader_selector* self_b = nullptr;
    std::atomic<bool> a_stopped{false};
    zkr::leader_selector first(*a, path, [&](std::stop_token stop) {
        t.begin("a", self_a->fencing_token());
        while (!stop.stop_requested()) std::this_thread::sleep_for(5ms);
        a_stopped = true;
        t.end();
    }, "a", {.requeue = true});
    self_a = &first;
    zkr::leader_selector second(*b, path, hold_for(t, self_b, 10min), "b");
    self_b = &second;
    first.start();
    REQUIRE(zkr::test::eventually([&] { return first.has_leadership(); }, 10s));
    second.start();
    REQUIRE(zkr::test::eventually([&] { return first.participants().size() == 2; }));
    // a's function must be running before its session ends: a term that ends before its thread
    // gets going never calls take_leadership (CI's loaded machine once started that thread only
    // after the expiry, and a_stopped never came).
    REQUIRE(zkr::test::eventually([&] { return t.count() == 1; }, 10s));
    const auto epoch = first.fencing_token();
    zkr::test::expire_session(zk.connect_string(), *a);
    CHECK(zkr::test::eventually([&] { return a_stopped.load(); }, 20s));
    REQUIRE(zkr::test::eventually([&] { return second.has_leadership(); }, 20s));
    CHECK(second.fencing_token() > epoch);
    // It queued again (requeue) behind the new leader.
    CHECK(zkr::test::eventually([&] { return second.participants() == std::vector<std::string>{"b", "a"}; }, 10s));
    second.interrupt_leadership();  // b's term returns; a leads again
    CHECK(zkr::test::eventually([&] { return first.has_leadership(); }, 10s));
    CHECK(second.participants() == std::vector<std::string>{"a"});  // b did not requeue
    // (No check that the terms never overlapped: the server ends a's session, and b's term may
    // begin before a's client has heard and stopped its function. That window is what the epoch
    // is for: b's writes carry a higher one.)
}

TEST_CASE("leader selector: lose_on_doubt stops the term when the connection is suspended, and it leads again after") {
    auto& zk = zkr::test::shared_server();
    const auto path = selector_path("doubt");
    zkr::test::tcp_proxy proxy(zk.client_port(0));
    auto a = connect("127.0.0.1:" + std::to_string(proxy.port()), 4s);
    terms t;
    zkr::leader_selector* self = nullptr;
    zkr::leader_selector s(*a, path, hold_for(t, self, 10min), "a", {.requeue = true, .lose_on_doubt = true});
    self = &s;
    s.start();
    REQUIRE(zkr::test::eventually([&] { return t.count() == 1; }, 10s));
    proxy.blackhole(true);  // silence: the client suspends after 2/3 of the session timeout
    CHECK(zkr::test::eventually([&] {
        std::lock_guard l(t.m);
        return t.running == 0;
    }, 10s));
    CHECK_FALSE(s.has_leadership());
    proxy.blackhole(false);
    REQUIRE(zkr::test::eventually([&] { return t.count() == 2; }, 20s));
    std::lock_guard l(t.m);
    CHECK(t.started[1].second > t.started[0].second);  // a new term, a new epoch
}

TEST_CASE("leader selector: a take_leadership that throws ends its term (logged), the next participant leads, nothing is left") {
    auto& zk = zkr::test::shared_server();
    const auto path = selector_path("throws");
    auto a = connect(zk.connect_string()), b = connect(zk.connect_string());
    std::atomic<int> thrown{0};
    terms t;
    zkr::leader_selector* self_b = nullptr;
    zkr::leader_selector thrower(*a, path, [&](std::stop_token) {
        ++thrown;
        throw std::runtime_error("the job failed");
    }, "a");
    zkr::leader_selector next(*b, path, hold_for(t, self_b, 10ms), "b");
    self_b = &next;
    thrower.start();
    REQUIRE(zkr::test::eventually([&] { return thrown.load() == 1; }, 10s));
    next.start();
    REQUIRE(zkr::test::eventually([&] { return t.count() == 1; }, 10s));
    CHECK(thrown.load() == 1);  // no requeue: it ran once
    thrower.requeue();
    CHECK(zkr::test::eventually([&] { return thrown.load() == 2; }, 10s));
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }, 10s));
}

// Issue 43 item 3: a grant that came in just before close() started take_leadership on its own
// thread up to 195 ms after close() returned. The term is granted, close() follows at once (before
// the term's thread would usually have begun), and take_leadership must never begin after it.
// A call whose function's first line runs after close() returned cannot be prevented (the call
// was decided before close() ran: CI's fresh root saw 3 in 40 under load), but it finds its token
// stopped, so it ends at once.
TEST_CASE("leader selector: a take_leadership that runs after close() returned finds its token stopped, however close it follows the grant") {
    auto& zk = zkr::test::shared_server();
    auto a = connect(zk.connect_string());
    int late = 0, called = 0;
    for (int round = 0; round < 40; ++round) {
        const auto path = selector_path("close-race-" + std::to_string(round));
        std::atomic<bool> closed{false};
        std::atomic<int> calls{0}, late_calls{0};
        {
            zkr::leader_selector s(*a, path, [&](std::stop_token token) {
                ++calls;
                if (closed && !token.stop_requested()) ++late_calls;
                while (!token.stop_requested()) std::this_thread::sleep_for(1ms);  // the term lasts until close()
            });
            s.start();
            // Spin, not poll: close() must follow the grant within microseconds.
            const auto until = std::chrono::steady_clock::now() + 10s;
            while (s.state() == zkr::hold_state::released && std::chrono::steady_clock::now() < until) std::this_thread::yield();
            REQUIRE(s.state() != zkr::hold_state::released);
            s.close();
            closed = true;
        }  // the destructor joins the term's thread
        late += late_calls.load();
        called += calls.load();
        CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }, 10s));
    }
    INFO(called << " of 40 terms called take_leadership (the others were closed before the call)");
    CHECK(late == 0);  // no call ran unstopped after close() returned
}

// Issue 43 item 14: a clean shutdown (a term asked to stop by close(), returning, the selector
// destroyed) logged a warning, so an operator saw a warning on every deploy.
TEST_CASE("leader selector: a clean shutdown logs no warning") {
    auto& zk = zkr::test::shared_server();
    auto sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(100);
    auto logger = std::make_shared<spdlog::logger>("selector-shutdown", sink);
    logger->set_level(spdlog::level::warn);
    auto o = zkr::test::test_options(zk.connect_string(), 4s);
    o.logger = logger;
    auto c = zkr::test::connect(o);
    const auto path = selector_path("clean-shutdown");
    for (const bool requeue : {false, true}) {
        for (const bool explicit_close : {true, false}) {  // close() then the destructor, or the destructor alone
            std::atomic<bool> leading{false};
            {
                zkr::leader_selector s(*c, path, [&](std::stop_token token) {
                    leading = true;
                    while (!token.stop_requested()) std::this_thread::sleep_for(1ms);
                }, "", {.requeue = requeue});
                s.start();
                REQUIRE(zkr::test::eventually([&] { return leading.load(); }, 10s));
                if (explicit_close) s.close();
            }
            CHECK(zkr::test::eventually([&] { return nodes_under(*c, path) == 0; }, 10s));
        }
    }
    // A service's own shutdown: the selector closed, then at once the client, then the selector
    // destroyed (its term's release still on its way when the client closes).
    {
        auto own = zkr::test::connect(o);
        std::atomic<bool> leading{false};
        zkr::leader_selector s(*own, path, [&](std::stop_token token) {
            leading = true;
            while (!token.stop_requested()) std::this_thread::sleep_for(1ms);
        });
        s.start();
        REQUIRE(zkr::test::eventually([&] { return leading.load(); }, 10s));
        s.close();
        own->close();
    }
    c->close();
    std::string warned;
    for (const auto& line : sink->last_formatted()) warned += line;
    INFO(warned);
    CHECK(warned.empty());
}

// Issue 43 item 5: a failing selector was invisible (a throw only logged, cause=none to the
// observer, 191 terms in 3 s with requeue, a refused selector never told).
TEST_CASE("leader selector: failures reach on_failure, and a throwing take_leadership backs off before it queues again") {
    auto& zk = zkr::test::shared_server();
    auto c = connect(zk.connect_string());
    const auto path = selector_path("failing");
    std::atomic<int> terms_run{0}, told{0};
    std::mutex m;
    std::string last_what;
    zkr::leader_selector::options o;
    o.requeue = true;
    o.requeue_backoff = 100ms;
    o.max_requeue_backoff = 400ms;
    o.on_failure = [&](std::exception_ptr e) {
        ++told;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            std::lock_guard l(m);
            last_what = ex.what();
        }
    };
    {
        zkr::leader_selector s(*c, path, [&](std::stop_token) {
            ++terms_run;
            throw std::runtime_error("the job failed");
        }, "a", o);
        s.start();
        std::this_thread::sleep_for(1500ms);
        s.close();
    }
    // Backed off 100, 200, 400, 400, ... ms: a handful of terms in 1.5 s, not hundreds.
    CHECK(terms_run.load() >= 3);
    CHECK(terms_run.load() <= 8);
    CHECK(zkr::test::eventually([&] { return told.load() == terms_run.load(); }, 5s));
    {
        std::lock_guard l(m);
        CHECK(last_what == "the job failed");
    }
    CHECK(zkr::test::eventually([&] { return nodes_under(*c, path) == 0; }, 10s));

    // Refused by another kind of lock on the path: told, with the error.
    const auto latch_path = selector_path("refused");
    zkr::leader_latch latch(*c, latch_path);
    latch.start();
    REQUIRE(latch.await_leadership(10s));
    std::promise<boost::system::error_code> refused;
    zkr::leader_selector::options r;
    r.on_failure = [&](std::exception_ptr e) {
        try {
            std::rethrow_exception(e);
        } catch (const zkr::error& ex) {
            refused.set_value(ex.code());
        } catch (...) {
            refused.set_value(make_error_code(errc::invalid_argument));
        }
    };
    zkr::leader_selector s(*c, latch_path, [](std::stop_token) {}, "b", r);
    s.start();
    auto f = refused.get_future();
    REQUIRE(f.wait_for(10s) == std::future_status::ready);
    CHECK(f.get() == errc::lock_kind_mismatch);
    s.close();
    latch.close();
}

TEST_CASE("leader selector misuse: an empty function, bad path, started or closed twice, requeue while queued, destroyed from its own term") {
    auto& zk = zkr::test::shared_server();
    const auto path = selector_path("misuse");
    auto a = connect(zk.connect_string());
    zkr::test::expect_error([&] { zkr::leader_selector s(*a, path, {}); }, errc::invalid_argument, "take_leadership is empty");
    zkr::test::expect_error([&] { zkr::leader_selector s(*a, "no-slash", [](std::stop_token) {}); }, errc::invalid_path, "no-slash");
    std::atomic<bool> running{false};
    zkr::leader_selector s(*a, path, [&](std::stop_token stop) {
        running = true;
        while (!stop.stop_requested()) std::this_thread::sleep_for(5ms);
        running = false;
    });
    zkr::test::expect_error([&] { s.close(); }, errc::invalid_argument, "never started");
    zkr::test::expect_error([&] { s.requeue(); }, errc::invalid_argument, "not started");
    CHECK_THROWS_AS(s.fencing_token(), zkr::error);
    s.start();
    zkr::test::expect_error([&] { s.start(); }, errc::invalid_argument, "start() called twice");
    REQUIRE(zkr::test::eventually([&] { return running.load(); }, 10s));
    zkr::test::expect_error([&] { s.requeue(); }, errc::invalid_argument, "already queued or leading");
    s.close();
    CHECK(zkr::test::eventually([&] { return !running.load(); }, 10s));
    zkr::test::expect_error([&] { s.close(); }, errc::invalid_argument, "close() called twice");
    zkr::test::expect_error([&] { s.start(); }, errc::invalid_argument, "after close()");
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }));

    // A term that destroys its own selector: the destructor cannot wait for itself; the node goes.
    std::atomic<bool> destroyed{false};
    auto owned = std::make_shared<std::unique_ptr<zkr::leader_selector>>();
    *owned = std::make_unique<zkr::leader_selector>(*a, path, [owned, &destroyed](std::stop_token) {
        owned->reset();
        destroyed = true;
    });
    (*owned)->start();
    CHECK(zkr::test::eventually([&] { return destroyed.load(); }, 10s));
    CHECK(zkr::test::eventually([&] { return nodes_under(*a, path) == 0; }, 10s));
}
