// Faults aimed at one step: a paused holder's late write, a create's reply lost on the wire.
#include "build_paths.hpp"
#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "fenced_store.hpp"
#include "recipe_checks.hpp"
#include "tcp_proxy.hpp"

#include <zkr/detail/request.hpp>
#include <zkr/fair_lock.hpp>
#include <zkr/interprocess_mutex.hpp>

#include "zkr_catch.hpp"

#include <boost/asio/use_future.hpp>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <future>
#include <thread>

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

namespace {
bool log_has(const std::string& file, const std::string& prefix, std::string* line = nullptr) {
    for (const auto& l : zkr::test::read_lines(file))
        if (l.rfind(prefix, 0) == 0) {
            if (line) *line = l;
            return true;
        }
    return false;
}
}  // namespace

TEST_CASE("a holder paused past its session timeout learns it lost the lock, and its late write is refused") {
    auto& zk = zkr::test::shared_server();
    const auto path = zkr::test::recipe_path("paused-holder");
    const auto log = zkr::test::temp_file("log");
    const auto store = zkr::test::temp_file("store");
    // The worker's session timeout is 4 s; it holds for 8 s, and we stop it for 6 s of them.
    zkr::test::child_process victim({ZKR_LOCK_WORKER, zk.connect_string(), "fenced", path, "1", "8000", log, store});
    REQUIRE(zkr::test::eventually([&] { return log_has(log, "ACQ "); }, 15s));
    std::string acq;
    log_has(log, "ACQ ", &acq);
    const long long victim_token = std::stoll(acq.substr(acq.find(' ', 4) + 1));
    victim.kill(SIGSTOP);
    const auto paused_at = clk::now();
    // Another process's turn comes once the paused holder's session expires.
    auto c = zkr::test::connect(zk.connect_string());
    zkr::interprocess_mutex m(*c, path);
    REQUIRE(m.acquire(20s));
    const auto waited = clk::now() - paused_at;
    const auto token = m.fencing_token();
    CHECK(token > victim_token);
    CHECK(zkr::test::fenced_write(store, token));
    m.release();
    std::this_thread::sleep_for(6s - std::min<clk::duration>(waited, 6s));
    victim.kill(SIGCONT);
    CHECK(victim.wait() == 0);
    std::string state, write;
    REQUIRE(log_has(log, "STATE ", &state));
    REQUIRE(log_has(log, "WRITE ", &write));
    CHECK_THAT(state, zkr::test::ends_with(" lost"));          // it learnt it lost the lock
    CHECK_THAT(write, zkr::test::ends_with(" refused"));       // and its write, made anyway, was refused
    const auto s = zkr::test::read_fenced(store);
    CHECK(s.count == 1);                                   // only the valid holder's write counts
    CHECK(s.highest_token == token);
    CHECK(waited >= 3s);  // not before the session could have expired (4 s, less the server's tick slack)
    std::remove(log.c_str());
    std::remove(store.c_str());
}

// A reply that reached the socket while the process could not run is not believed once the
// session could have expired: the C client's receive timeout is applied before the bytes are read.
// Here the network thread is held on the C client's lock, as a SIGSTOP or a VM pause would hold the
// whole process, while a guarded write's reply arrives and the session expires. Reading the reply
// first (as zkr once did) reported the write "ok" with the hold still "held", seconds after its
// session had ended: the nemesis suite's paused holders caught it now and then.
TEST_CASE("a reply read only after the session could have expired is not believed: the hold is not held") {
    auto& zk = zkr::test::shared_server();
    zkr::test::tcp_proxy proxy(zk.client_port(0));
    auto c = zkr::test::connect("127.0.0.1:" + std::to_string(proxy.port()));
    auto direct = zkr::test::connect(zk.connect_string());
    const auto session = c->negotiated_session_timeout();
    const auto path = zkr::test::recipe_path("stale-reply");
    zkr::fair_lock m(*c, path);  // held by the object: the guarded write may come from another thread
    REQUIRE(m.acquire(10s));
    const auto token = m.fencing_token();

    proxy.blackhole(true);  // the guarded write waits on the wire
    boost::system::error_code confirm_ec;
    auto state_after_confirm = std::async(std::launch::async, [&] {
        try {
            m.guarded_multi({zkr::multi_op::check("/")});
        } catch (const zkr::error& e) {
            confirm_ec = e.code();
        }
        return m.state();
    });
    std::this_thread::sleep_for(300ms);  // it is in the socket, behind the blackhole
    {
        const std::lock_guard stall(zkr::detail::c_client_mutex());
        proxy.blackhole(false);  // the server applies it, its reply waits in the client's socket
        std::this_thread::sleep_for(session + 2s);  // and, with no pings, the session expires
    }
    REQUIRE(state_after_confirm.wait_for(20s) == std::future_status::ready);
    const auto seen = state_after_confirm.get();
    INFO("guarded write: " << confirm_ec.message() << ", state then: " << zkr::to_string(seen));
    CHECK(confirm_ec);  // its outcome is unknown to us, not "ok"
    CHECK(seen != zkr::hold_state::held);
    CHECK(zkr::test::eventually([&] { return m.state() == zkr::hold_state::lost; }, 15s));
    // The next holder gets a higher token; nothing is left behind.
    zkr::fair_lock next(*direct, path);
    REQUIRE(next.acquire(10s));
    CHECK(next.fencing_token() > token);
    next.unlock();
    boost::system::error_code ec;
    m.release(ec);
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(*direct, path) == 0; }, 10s));
}

// The other half of a pause: the reply was read before the process stopped, and the caller runs
// again before the network thread does. The hold must not read held then either: a caller sees
// doubtful once nothing was heard from the server for 2/3 of the session timeout (the C client's
// receive timeout), without waiting for the network thread to notice.
TEST_CASE("a hold reads doubtful once its connection was silent past the receive timeout, before the network thread looks") {
    auto& zk = zkr::test::shared_server();
    auto c = zkr::test::connect(zk.connect_string());
    const auto receive_timeout = c->negotiated_session_timeout() * 2 / 3;
    zkr::fair_lock m(*c, zkr::test::recipe_path("silent"));
    REQUIRE(m.acquire(10s));
    c->exists("/");  // the server heard from us just now: the session outlives the stall below
    {
        const std::lock_guard stall(zkr::detail::c_client_mutex());  // the network thread cannot run
        const auto stalled_at = clk::now();
        std::this_thread::sleep_for(receive_timeout / 4);
        CHECK(m.state() == zkr::hold_state::held);  // a short silence is no doubt (pings come every third)
        CHECK(m.is_valid());
        std::this_thread::sleep_until(stalled_at + receive_timeout + 200ms);
        CHECK(m.state() == zkr::hold_state::doubtful);
        CHECK_FALSE(m.is_valid());
        CHECK_THROWS_AS(m.guarded_multi({zkr::multi_op::check("/")}), zkr::error);  // refused before it is sent
    }
    // Released, the network thread sees the silence itself; the session outlived it (the stall was
    // shorter than the session timeout), so the hold comes back.
    CHECK(zkr::test::eventually([&] { return m.state() == zkr::hold_state::held; }, 15s));
    m.unlock();
}

// When the C client drops a connection inside zookeeper_interest (its receive timeout passed), the
// fd it hands back is the number of the socket it has just closed, which another thread may take at
// once. zkr once watched whatever then had that number: a readable pipe there fed a read to the
// next connect while it was under way, and the C client lost its input buffer (LeakSanitizer caught
// it in the nemesis suite, a paused holder's worker). Here a thread keeps taking the lowest free
// numbers with readable pipes while the network thread is stalled past the receive timeout with a
// request queued behind it, several times: the connection must come back each time, requests must
// work, and the sanitized builds must find nothing leaked or touched wrongly.
TEST_CASE("a connection dropped by its receive timeout: its closed socket's number, reused by another thread, is never watched") {
    auto& zk = zkr::test::shared_server();
    auto options = zkr::test::test_options(zk.connect_string(), 2s);
    auto log = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000);
    options.logger = std::make_shared<spdlog::logger>("stale-fd", log);
    options.logger->set_level(spdlog::level::warn);
    auto c = std::make_unique<zkr::client>(options);
    c->start();
    REQUIRE(c->block_until_connected(10s));
    const auto receive_timeout = c->negotiated_session_timeout() * 2 / 3;
    std::atomic<bool> stop{false};
    std::thread squatter([&] {
        std::deque<std::array<int, 2>> pipes;  // readable ends: a byte waits in each
        while (!stop.load()) {
            int p[2];
            if (::pipe(p) == 0) {
                [[maybe_unused]] const auto n = ::write(p[1], "x", 1);
                pipes.push_back({p[0], p[1]});
            }
            if (pipes.size() > 16) {
                ::close(pipes.front()[0]);
                ::close(pipes.front()[1]);
                pipes.pop_front();
            }
        }
        for (const auto& p : pipes) {
            ::close(p[0]);
            ::close(p[1]);
        }
    });
    for (int round = 0; round < 4; ++round) {
        INFO("round " << round);
        REQUIRE(zkr::test::eventually([&] { return c->state() == zkr::connection_state::connected ||
                                                   c->state() == zkr::connection_state::reconnected; }, 10s));
        decltype(c->async_exists("/", boost::asio::use_future)) queued;
        {
            const std::lock_guard stall(zkr::detail::c_client_mutex());
            // Sent while the network thread is idle, the request is the handler it stalls in, and
            // the pump it then posts runs before the timer that expired meanwhile: that pump is the
            // call that finds the receive timeout passed and drops the connection.
            queued = c->async_exists("/", boost::asio::use_future);
            std::this_thread::sleep_for(receive_timeout + 100ms);
        }
        CHECK(queued.wait_for(15s) == std::future_status::ready);  // answered, or failed with the connection
        CHECK(zkr::test::eventually([&] {
            boost::system::error_code ec;
            return c->exists("/", ec).has_value() && !ec;
        }, 10s));
    }
    stop = true;
    squatter.join();
    int drops = 0;
    for (const auto& line : log->last_formatted()) {
        INFO(line);
        CHECK(line.find("not a socket") == std::string::npos);  // zkr looked at a number not its own
        if (line.find("timed out") != std::string::npos) ++drops;
    }
    CHECK(drops >= 4);  // each stall did end in the C client's receive timeout
}

// In an ensemble a follower may keep a connection open, and answer its reads and pings, after the
// leader ended its session: every write then comes back "session expired" while the C client stays
// connected (a fault-suite worker retried its creates for a minute so). Here that answer is injected
// into one reply on a live session: zkr must end the session itself, once, as if the handle had
// expired: the hold is lost, a new session starts, the request goes through on it, and the old
// session's node goes (zkr closes the old session), so another client holds with a higher token.
TEST_CASE("a request answered session expired on a live connection ends that session, once, and its hold is lost") {
    auto& zk = zkr::test::shared_server();
    auto c = zkr::test::connect(zk.connect_string());
    auto other = zkr::test::connect(zk.connect_string());
    const auto path = zkr::test::recipe_path("expired-answer");
    zkr::interprocess_mutex m(*c, path);
    REQUIRE(m.acquire(10s));
    const auto token = m.fencing_token();
    const auto old_session = c->session_id();
    zkr::test::state_recorder states(*c);

    zkr::detail::expire_next_replies(zkr::detail::connection_of(*c), 1);
    boost::system::error_code ec;
    c->exists("/", ec);  // answered "session expired": retried, and answered, on the new session
    CHECK_FALSE(ec);
    CHECK(states.wait_for(zkr::connection_state::lost, 10s));
    CHECK(states.wait_for(zkr::connection_state::reconnected, 10s));
    CHECK(c->session_id() != old_session);
    CHECK(zkr::test::eventually([&] { return m.state() == zkr::hold_state::lost; }, 10s));

    zkr::interprocess_mutex next(*other, path);
    REQUIRE(next.acquire(10s));  // the old session was closed with its node
    CHECK(next.fencing_token() > token);
    next.release();
    m.release(ec);
    CHECK(ec == zkr::errc::lock_lost);

    // One loss, one new session: the handle is not reset twice for the same loss.
    const auto session = c->session_id();
    std::this_thread::sleep_for(500ms);
    CHECK(c->session_id() == session);
    const auto seen = states.states();
    CHECK(std::count(seen.begin(), seen.end(), zkr::connection_state::lost) == 1);
    CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(*other, path) == 0; }, 10s));
}

// The network thread moves the connection to suspended first and the holds to doubtful right
// after. A caller reading in between must not see held: a paused holder of the fault suite did
// (it read held at release after its session had expired). An observer registered before the hold
// runs in that gap and reads the hold's state there.
TEST_CASE("a hold never reads held once its connection is suspended, even before the hold itself is told") {
    auto& zk = zkr::test::shared_server();
    zkr::test::tcp_proxy proxy(zk.client_port(0));
    auto c = zkr::test::connect("127.0.0.1:" + std::to_string(proxy.port()));
    zkr::fair_lock m(*c, zkr::test::recipe_path("gap"));
    std::promise<zkr::hold_state> seen;
    bool recorded = false;  // network thread only
    const auto id = zkr::detail::add_state_observer(zkr::detail::connection_of(*c), [&](zkr::connection_state s) {
        if (s == zkr::connection_state::suspended && !recorded) {
            recorded = true;
            seen.set_value(m.state());
        }
    });
    REQUIRE(m.acquire(10s));
    proxy.reset_all();  // the connection drops: suspended
    auto state_in_gap = seen.get_future();
    REQUIRE(state_in_gap.wait_for(15s) == std::future_status::ready);
    CHECK(state_in_gap.get() == zkr::hold_state::doubtful);
    zkr::detail::remove_state_observer(zkr::detail::connection_of(*c), id);
    CHECK(zkr::test::eventually([&] { return m.state() == zkr::hold_state::held; }, 15s));  // same session
    m.unlock();
}

// The reply of a create is lost on the wire (through a proxy, not inside zkr) after the server
// applied it: the protected create finds its node on reconnection instead of making a second one.
TEST_CASE("a create's reply lost on the wire after the server applied it: one node, adopted, no orphan") {
    zkr::test::zk_cluster zk;
    zkr::test::tcp_proxy proxy(zk.client_port(0));
    auto c = zkr::test::connect("127.0.0.1:" + std::to_string(proxy.port()));
    auto direct = zkr::test::connect(zk.connect_string());
    const std::string folder = "/lost-reply";

    direct->create(folder);  // so the create is applied at once (no "no node" round first)
    SECTION("a plain protected create") {
        proxy.drop_replies(true);
        auto created = c->async_create(folder + "/n-", "x",
                                       {.mode = zkr::create_mode::ephemeral_sequential, .create_parents = true, .protect = true},
                                       boost::asio::use_future);
        REQUIRE(zkr::test::eventually([&] { return zkr::test::nodes_under(*direct, folder) == 1; }, 5s));
        proxy.reset_all();  // the reply never arrives; the connection drops
        proxy.drop_replies(false);
        REQUIRE(created.wait_for(15s) == std::future_status::ready);
        const auto r = created.get();
        const auto children = direct->get_children(folder).children;
        REQUIRE(children.size() == 1);
        CHECK(folder + "/" + children.front() == r.path);
        CHECK(direct->exists(r.path)->ephemeral_owner == c->session_id());
    }
    SECTION("a lock's node") {
        zkr::fair_lock m(*c, folder);  // its hold belongs to the object, not the acquiring thread
        proxy.drop_replies(true);
        auto acquired = std::async(std::launch::async, [&] { return m.acquire(15s); });
        REQUIRE(zkr::test::eventually([&] { return zkr::test::nodes_under(*direct, folder) == 1; }, 5s));
        proxy.reset_all();
        proxy.drop_replies(false);
        REQUIRE(acquired.wait_for(20s) == std::future_status::ready);
        CHECK(acquired.get());
        CHECK(zkr::test::nodes_under(*direct, folder) == 1);  // no second node for the same owner
        CHECK(m.node_path() == folder + "/" + direct->get_children(folder).children.front());
        m.unlock();
        CHECK(zkr::test::nodes_under(*direct, folder) == 0);
    }
}
