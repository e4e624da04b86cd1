// The observer (client_options::observer) against a real server: every hold step once and in
// order, through a dropped connection and an expired session; operations with their outcome; a
// latch's terms; and the observer's calls never on the network thread.
#include "recipe_checks.hpp"
#include "shared_server.hpp"
#include "tcp_proxy.hpp"

#include <zkr/fair_lock.hpp>
#include <zkr/interprocess_mutex.hpp>
#include <zkr/leader_latch.hpp>
#include <zkr/leader_selector.hpp>
#include <zkr/observer.hpp>
#include <zkr/revocation.hpp>

#include "zkr_catch.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <set>
#include <mutex>

using namespace std::chrono_literals;

namespace {

// Every event as one line ("session suspended", "hold queued 1", ...), in the order heard.
class recording_observer final : public zkr::observer {
public:
    void on_operation(const zkr::operation_event& e) override {
        std::lock_guard lock(m_);
        operations_.push_back(e);
        note_thread();
    }
    void on_session(const zkr::session_event& e) override { add("session " + std::string(zkr::to_string(e.state))); }
    void on_hold(const zkr::hold_event& e) override {
        std::string line = "hold " + std::string(zkr::to_string(e.kind));
        if (e.kind == zkr::hold_event_kind::queued) line += " " + std::to_string(e.position);
        if (e.kind == zkr::hold_event_kind::lost) line += " " + std::string(zkr::to_string(e.cause));
        std::lock_guard lock(m_);
        holds_.push_back(e);
        lines_.push_back(line);
        note_thread();
    }
    void on_leadership(const zkr::leadership_event& e) override {
        std::lock_guard lock(m_);
        terms_.push_back(e);
        lines_.push_back(e.gained ? std::string("leader gained") : "leader lost " + std::string(zkr::to_string(e.cause)));
        note_thread();
    }

    std::vector<std::string> lines() const {
        std::lock_guard lock(m_);
        return lines_;
    }
    // The hold lines only.
    std::vector<std::string> hold_lines() const {
        std::vector<std::string> out;
        for (const auto& l : lines())
            if (l.rfind("hold ", 0) == 0) out.push_back(l);
        return out;
    }
    std::vector<zkr::hold_event> holds() const {
        std::lock_guard lock(m_);
        return holds_;
    }
    std::vector<zkr::operation_event> operations() const {
        std::lock_guard lock(m_);
        return operations_;
    }
    std::vector<zkr::leadership_event> terms() const {
        std::lock_guard lock(m_);
        return terms_;
    }
    std::set<std::thread::id> threads() const {
        std::lock_guard lock(m_);
        return threads_;
    }

private:
    void add(std::string line) {
        std::lock_guard lock(m_);
        lines_.push_back(std::move(line));
        note_thread();
    }
    void note_thread() { threads_.insert(std::this_thread::get_id()); }
    mutable std::mutex m_;
    std::vector<std::string> lines_;
    std::vector<zkr::hold_event> holds_;
    std::vector<zkr::operation_event> operations_;
    std::vector<zkr::leadership_event> terms_;
    std::set<std::thread::id> threads_;
};

std::unique_ptr<zkr::client> observed_client(const std::string& cs, std::shared_ptr<zkr::observer> o) {
    auto options = zkr::test::test_options(cs);
    options.observer = std::move(o);
    auto c = std::make_unique<zkr::client>(options);
    c->start();
    REQUIRE(c->block_until_connected(10s));
    return c;
}

std::ptrdiff_t index_of(const std::vector<std::string>& lines, const std::string& line, std::size_t from = 0) {
    const auto it = std::find(lines.begin() + static_cast<std::ptrdiff_t>(std::min(from, lines.size())), lines.end(), line);
    return it == lines.end() ? -1 : it - lines.begin();
}

// Where the hold's loss is among the lines: lost with its session's end, or with its node deleted
// by that end (see the test below); -1 when neither is there.
std::ptrdiff_t hold_lost_at(const std::vector<std::string>& lines) {
    const auto ended = index_of(lines, "hold lost session_ended");
    return ended >= 0 ? ended : index_of(lines, "hold lost node_deleted");
}

// The observer's lines, one a line: what a failed check reports.
std::string heard_lines(const std::vector<std::string>& lines) {
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
}

}  // namespace

TEST_CASE("observer: every hold step once and in order, through a dropped connection and an expired session") {
    auto& zk = zkr::test::shared_server();
    zkr::test::tcp_proxy proxy(zk.client_port(0));
    const auto ears = std::make_shared<recording_observer>();
    auto observed = observed_client("127.0.0.1:" + std::to_string(proxy.port()), ears);
    auto other = zkr::test::connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("observer");
    zkr::fair_lock first(*other, path), lock(*observed, path);

    // Queued behind another holder: one ahead.
    first.acquire();
    auto acquired = std::async(std::launch::async, [&] { return lock.acquire(20s); });
    REQUIRE(zkr::test::eventually([&] { return ears->hold_lines() == std::vector<std::string>{"hold queued 1"}; }));
    std::this_thread::sleep_for(100ms);  // the wait shows in the acquire's duration
    first.release();
    REQUIRE(acquired.get());

    // A dropped connection: doubt, then held again once the node is re-validated.
    proxy.reset_all();
    {
        const bool held_again = zkr::test::eventually([&] { return index_of(ears->lines(), "hold held_again") >= 0; }, 15s);
        INFO(heard_lines(ears->lines()));
        REQUIRE(held_again);
    }

    // The session expires: lost, its cause, and a release of the lost hold says nothing more. The
    // expiry is a second handle that takes the session over and closes it: the server deletes the
    // node first and drops the old connection after, so the client may hear of the deletion on
    // its still-open connection before it learns that the session ended (seen once in about 200
    // runs beside a build): then the cause is node_deleted. Either way the hold is lost at once.
    zkr::test::expire_session(zk.connect_string(), *observed);
    {
        const bool lost_hold = zkr::test::eventually([&] { return hold_lost_at(ears->lines()) >= 0; }, 15s);
        INFO(heard_lines(ears->lines()));
        REQUIRE(lost_hold);
    }
    lock.unlock();
    REQUIRE(lock.acquire(10s));
    std::this_thread::sleep_for(50ms);
    lock.release();
    REQUIRE(zkr::test::eventually([&] { return !ears->hold_lines().empty() && ears->hold_lines().back() == "hold released"; }));
    std::this_thread::sleep_for(200ms);  // nothing more comes

    const auto lines = ears->lines();
    INFO(heard_lines(lines));
    // Expiring the session stalls the client meanwhile: it may see its connection suspended
    // first, and then doubts its hold once more before it is lost.
    const auto suspended = index_of(lines, "session suspended");
    REQUIRE(suspended >= 0);
    const auto hold_lost = hold_lost_at(lines);
    REQUIRE(hold_lost >= 0);
    const auto& lost_line = lines[static_cast<std::size_t>(hold_lost)];
    std::vector<std::string> expected = {"hold queued 1", "hold acquired", "hold doubtful", "hold held_again"};
    const auto suspended_again = index_of(lines, "session suspended", static_cast<std::size_t>(suspended) + 1);
    if (suspended_again >= 0 && suspended_again < hold_lost) expected.push_back("hold doubtful");
    for (const auto& l : {lost_line, std::string("hold acquired"), std::string("hold released")}) expected.push_back(l);
    CHECK(ears->hold_lines() == expected);
    // Each hold event after the connection change that caused it.
    const auto doubtful = index_of(lines, "hold doubtful");
    CHECK(suspended < doubtful);
    const auto reconnected = index_of(lines, "session reconnected", static_cast<std::size_t>(suspended));
    CHECK(reconnected >= 0);
    CHECK(reconnected < index_of(lines, "hold held_again"));
    const auto lost = index_of(lines, "session lost");
    REQUIRE(lost >= 0);
    if (lost_line == "hold lost session_ended") CHECK(lost < hold_lost);
    CHECK(index_of(lines, "session connected") == 0);  // the first connection, before anything else

    const auto holds = ears->holds();
    REQUIRE(holds.size() == expected.size());
    CHECK(holds[0].lock_path == path);
    CHECK(holds[1].duration >= 100ms);  // the first acquire waited for the other holder
    CHECK(holds[1].fencing_token > 0);
    const auto& second = holds[holds.size() - 2];
    const auto& released = holds.back();
    CHECK(released.duration >= 50ms);  // the second hold, held 50 ms
    CHECK(second.fencing_token > holds[1].fencing_token);
    CHECK(released.node_path == second.node_path);
    // Issue 43 item 9: how long the hold was doubtful, the kind of recipe, and when (wall clock).
    CHECK(holds[3].kind == zkr::hold_event_kind::held_again);
    CHECK(holds[3].duration > 0ns);
    CHECK(holds[3].duration < 15s);
    for (const auto& h : holds) CHECK(h.recipe == "mutex");
    for (std::size_t i = 1; i < holds.size(); ++i) CHECK(holds[i - 1].at <= holds[i].at);
    CHECK(std::chrono::system_clock::now() - holds.front().at < 2min);

    // Operations: the creates of the lock's nodes, with their path, outcome and latency.
    const auto ops = ears->operations();
    const auto creates = std::count_if(ops.begin(), ops.end(), [&](const zkr::operation_event& e) {
        return e.kind == zkr::operation_kind::create && e.path.rfind(path + "/", 0) == 0 && !e.result && e.latency > 0ns;
    });
    CHECK(creates == 2);
    // Never on the network thread (nor the test's): all on the one callback thread.
    CHECK(ears->threads().size() == 1);
    CHECK(ears->threads().count(std::this_thread::get_id()) == 0);
}

TEST_CASE("observer: an operation's failure and its retries are reported") {
    auto& zk = zkr::test::shared_server();
    const auto ears = std::make_shared<recording_observer>();
    auto c = observed_client(zk.connect_string(), ears);
    const auto path = zkr::test::recipe_path("observer-ops", "missing");
    boost::system::error_code ec;
    c->get_data(path, ec);
    CHECK(ec == zkr::errc::no_node);
    REQUIRE(zkr::test::eventually([&] { return !ears->operations().empty(); }));
    const auto op = ears->operations().back();
    CHECK(op.kind == zkr::operation_kind::get_data);
    CHECK(op.path == path);
    CHECK(op.result == zkr::errc::no_node);
    CHECK(op.retries == 0);
}

TEST_CASE("observer: a latch's terms, gained with a rising epoch and lost with the cause") {
    auto& zk = zkr::test::shared_server();
    const auto ears = std::make_shared<recording_observer>();
    auto c = observed_client(zk.connect_string(), ears);
    const auto path = zkr::test::recipe_path("observer-latch", "election");
    zkr::leader_latch latch(*c, path, "a");
    latch.start();
    REQUIRE(latch.await_leadership(10s));
    zkr::test::expire_session(zk.connect_string(), *c);
    REQUIRE(zkr::test::eventually([&] { return ears->terms().size() >= 3; }, 20s));
    latch.close();
    REQUIRE(zkr::test::eventually([&] { return ears->terms().size() >= 4; }, 10s));
    const auto terms = ears->terms();
    REQUIRE(terms.size() == 4);
    CHECK(terms[0].gained);
    CHECK(terms[0].path == path);
    CHECK_FALSE(terms[1].gained);
    CHECK(terms[1].cause == zkr::lost_cause::session_ended);
    CHECK(terms[1].epoch == terms[0].epoch);
    CHECK(terms[2].gained);
    CHECK(terms[2].epoch > terms[0].epoch);
    CHECK_FALSE(terms[3].gained);
    CHECK(terms[3].cause == zkr::lost_cause::none);  // given up: close()
}

TEST_CASE("observer: one that throws is logged, and the client goes on") {
    struct throwing final : zkr::observer {
        std::atomic<int> calls{0};
        void on_operation(const zkr::operation_event&) override {
            ++calls;
            throw std::runtime_error("observer failure");
        }
    };
    auto& zk = zkr::test::shared_server();
    const auto ears = std::make_shared<throwing>();
    auto c = observed_client(zk.connect_string(), ears);
    const auto path = zkr::test::recipe_path("observer-throws", "node");
    c->create(path, "x", {.create_parents = true});
    CHECK(c->exists(path).has_value());
    c->remove(path);
    CHECK(zkr::test::eventually([&] { return ears->calls.load() >= 3; }));
}

TEST_CASE("observer: a selector's term, gained and ended when take_leadership returns") {
    auto& zk = zkr::test::shared_server();
    const auto ears = std::make_shared<recording_observer>();
    auto c = observed_client(zk.connect_string(), ears);
    const auto path = zkr::test::recipe_path("observer-selector", "election");
    std::atomic<bool> ran{false};
    zkr::leader_selector selector(*c, path, [&](std::stop_token) { ran = true; });
    selector.start();
    REQUIRE(zkr::test::eventually([&] { return ears->terms().size() >= 2; }, 10s));
    const auto terms = ears->terms();
    CHECK(ran.load());
    REQUIRE(terms.size() == 2);
    CHECK(terms[0].gained);
    CHECK(terms[0].epoch > 0);
    CHECK_FALSE(terms[1].gained);
    CHECK(terms[1].epoch == terms[0].epoch);
    CHECK(terms[1].cause == zkr::lost_cause::none);  // its function returned: given up
    selector.close();
}

// Issue 43 item 16: the order of a hold's loss and the leadership term's end it causes varied
// between runs (a selector's take_leadership woken by its stop token posted "ended" while the
// network thread had yet to post "lost"). One order now: the hold's event first.
TEST_CASE("observer: a selector's lost hold is heard before the term's end, every time") {
    auto& zk = zkr::test::shared_server();
    auto other = zkr::test::connect(zk.connect_string());
    for (int round = 0; round < 8; ++round) {
        const auto ears = std::make_shared<recording_observer>();
        auto c = observed_client(zk.connect_string(), ears);
        const auto path = zkr::test::recipe_path("observer-order-" + std::to_string(round), "election");
        std::atomic<bool> leading{false};
        zkr::leader_selector selector(*c, path, [&](std::stop_token token) {
            leading = true;
            std::mutex m;
            std::condition_variable_any cv;
            std::unique_lock lock(m);
            cv.wait(lock, token, [] { return false; });  // wakes the moment the stop is requested
        });
        selector.start();
        REQUIRE(zkr::test::eventually([&] { return leading.load(); }, 10s));
        std::this_thread::sleep_for(150ms);  // past the own-node watch's delay: the deletion is heard
        for (const auto& node : other->get_children(path).children) other->remove(path + "/" + node);
        REQUIRE(zkr::test::eventually([&] { return index_of(ears->lines(), "leader lost node_deleted") >= 0; }, 10s));
        const auto lines = ears->lines();
        INFO(heard_lines(lines));
        const auto lost = index_of(lines, "hold lost node_deleted");
        REQUIRE(lost >= 0);
        CHECK(lost < index_of(lines, "leader lost node_deleted"));
        selector.close();
    }
}

TEST_CASE("observer: a selector's term that ended by a throw says so (failure), a clean one does not") {
    auto& zk = zkr::test::shared_server();
    const auto ears = std::make_shared<recording_observer>();
    auto c = observed_client(zk.connect_string(), ears);
    const auto path = zkr::test::recipe_path("observer-selector-throws", "election");
    zkr::leader_selector selector(*c, path, [](std::stop_token) { throw std::runtime_error("no database"); });
    selector.start();
    REQUIRE(zkr::test::eventually([&] { return ears->terms().size() >= 2; }, 10s));
    const auto terms = ears->terms();
    CHECK(terms[0].failure.empty());
    CHECK_FALSE(terms[1].gained);
    CHECK(terms[1].failure == "no database");
    selector.close();
}

// Issue 43 item 9: a revocation request was invisible to the observer.
TEST_CASE("observer: a revocable hold asked to let go is heard as revocation_requested, and is still held") {
    auto& zk = zkr::test::shared_server();
    const auto ears = std::make_shared<recording_observer>();
    auto c = observed_client(zk.connect_string(), ears);
    const auto path = zkr::test::recipe_path("observer-revoke");
    zkr::interprocess_mutex m(*c, path, [] {});
    m.lock();
    // One watch on the node (issue 44): the read of its data at the grant, and no exists beside
    // it once the hold has lasted past the plain hold's delay.
    std::this_thread::sleep_for(300ms);
    const auto reads_of_node = [&](zkr::operation_kind kind) {
        const auto ops = ears->operations();
        return std::count_if(ops.begin(), ops.end(), [&](const zkr::operation_event& e) { return e.kind == kind && e.path == m.node_path(); });
    };
    CHECK(reads_of_node(zkr::operation_kind::get_data) == 1);
    CHECK(reads_of_node(zkr::operation_kind::exists) == 0);
    zkr::revoke(*c, path);
    REQUIRE(zkr::test::eventually([&] { return index_of(ears->lines(), "hold revocation_requested") >= 0; }, 10s));
    // Its own data written back over the request: the node names its holder again.
    CHECK(zkr::test::eventually([&] { return c->get_data(m.node_path()).data != zkr::revocation_signal; }, 5s));
    CHECK(reads_of_node(zkr::operation_kind::exists) == 0);
    const auto holds = ears->holds();
    const auto it = std::find_if(holds.begin(), holds.end(), [](const zkr::hold_event& e) { return e.kind == zkr::hold_event_kind::revocation_requested; });
    REQUIRE(it != holds.end());
    CHECK(it->node_path == m.node_path());
    CHECK(it->lock_path == path);
    CHECK(it->fencing_token == m.fencing_token());
    CHECK(it->recipe == "mutex");
    CHECK(m.state() == zkr::hold_state::held);
    m.unlock();
}

// Issue 43 item 9: a recipe's expected no_node (a node that had already gone) was counted as a
// failed operation, so an alert on failures fired on normal traffic. Here: a waiter whose session
// expires removes its old node on the new session, which the expiry had already deleted.
TEST_CASE("observer: a recipe's expected no_node is marked expected, and no other no_node comes from the recipe") {
    auto& zk = zkr::test::shared_server();
    const auto ears = std::make_shared<recording_observer>();
    auto c = observed_client(zk.connect_string(), ears);
    auto other = zkr::test::connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("observer-expected");
    zkr::interprocess_mutex holder(*other, path), waiter(*c, path);
    holder.lock();
    auto waiting = std::async(std::launch::async, [&] {
        waiter.lock();
        waiter.unlock();
    });
    REQUIRE(zkr::test::eventually([&] { return zkr::test::nodes_under(*other, path) == 2; }, 10s));
    zkr::test::expire_session(zk.connect_string(), *c);
    REQUIRE(zkr::test::eventually([&] { return zkr::test::nodes_under(*other, path) == 2; }, 20s));  // queued again
    holder.unlock();
    waiting.get();
    REQUIRE(zkr::test::eventually([&] {
        for (const auto& o : ears->operations())
            if (o.result == zkr::errc::no_node && o.expected) return true;
        return false;
    }, 10s));
    for (const auto& o : ears->operations())
        if (o.result == zkr::errc::no_node && o.path.rfind(path, 0) == 0) CHECK(o.expected);
}
