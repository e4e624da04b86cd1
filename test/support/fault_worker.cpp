// A worker process of the fault suite (issue 5): it contends on one recipe until a stop file
// appears, and records what it did and saw in its history file (format: history.hpp).
// Usage: zkr_fault_worker CONNECT RECIPE PATH HISTORY STORE STOP_FILE HOLD_MS SESSION_MS
//   RECIPE: mutex | mutex_cached (mutex_options::cache_hold) | fair | semaphore_mutex | semaphore:MAX
//           | latch: a leader_latch per acquire (start, await leadership, close on release)
//           | unlocked: no lock at all (every acquire "succeeds"), to prove the checker catches overlap
// Mutex-like recipes do a fenced read-modify-write of STORE while they hold; the semaphore takes
// 1 or 2 leases at random and only confirms (several holders at once would race on the store by design).
// Each hold: grant, [read, sleep HOLD_MS, write], confirm (a guarded multi), release.
#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "fenced_store.hpp"
#include "hex.hpp"
#include "history.hpp"

#include <zkr/detail/request.hpp>
#include <zkr/zkr.hpp>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <thread>

namespace {

using zkr::test::mono_now;
using ms = std::chrono::milliseconds;

int history_fd = -1;

void record(const std::string& line) {
    const std::string l = line + "\n";
    if (::write(history_fd, l.data(), l.size()) != static_cast<ssize_t>(l.size())) std::abort();
}

template <typename... Parts>
std::string join(const Parts&... parts) {
    std::string out;
    ((out += (out.empty() ? "" : " "), out += parts), ...);
    return out;
}

std::string num(std::int64_t n) { return std::to_string(n); }

std::string hex(const std::string& bytes) {
    auto out = zkr::test::hex(bytes);
    return out.empty() ? "-" : out;
}

// Called from the client's callback thread and from the loop; records each session once.
void note_session(zkr::client& c) {
    static std::mutex m;
    static std::int64_t last = 0;
    std::lock_guard lock(m);
    const auto [id, password] = zkr::detail::session_credentials(zkr::detail::connection_of(c));
    if (id == 0 || id == last) return;
    last = id;
    record(join(std::string("session"), num(mono_now()), num(id), hex(password)));
}

// What one hold offers the loop, whatever the recipe.
struct hold {
    std::int64_t token = 0;
    int qty = 1;
    std::function<void()> confirm;  // throws on failure
    std::function<std::string()> state;
    std::function<void(boost::system::error_code&)> release;
};

// Timed out or cancelled: certainly no hold. Anything else may have left a grant we never saw.
bool certainly_failed(const boost::system::error_code& ec) {
    return ec == zkr::errc::cancelled || ec == zkr::errc::invalid_argument;
}

std::vector<zkr::multi_op> confirm_ops() { return {zkr::multi_op::check("/")}; }

// think_ms: after each release, a random pause of up to that long (lock caching: the queue is
// then empty now and then, and a worker takes its kept node back).
void run(zkr::client& c, const std::function<std::optional<hold>(ms)>& acquire, bool use_store,
         const std::string& store, const std::string& stop_file, int hold_ms, int think_ms = 0) {
    std::mt19937 thinking(static_cast<unsigned>(::getpid()));
    while (!std::filesystem::exists(stop_file)) {
        if (think_ms > 0) std::this_thread::sleep_for(ms(std::uniform_int_distribution<int>(0, think_ms)(thinking)));
        note_session(c);
        const auto requested = mono_now();
        std::optional<hold> h;
        try {
            h = acquire(ms(2000));
            if (!h) record(join(std::string("nogrant"), num(requested), num(mono_now()), std::string("fail timeout")));
        } catch (const zkr::error& e) {
            record(join(std::string("nogrant"), num(requested), num(mono_now()),
                        std::string(certainly_failed(e.code()) ? "fail" : "unknown"), "errc" + num(e.code().value())));
            std::this_thread::sleep_for(ms(50));
            continue;
        }
        if (!h) continue;
        const auto token = num(h->token);
        record(join(std::string("grant"), num(requested), num(mono_now()), token, num(h->qty)));
        if (use_store) {
            const auto value = zkr::test::fenced_read(store, h->token);
            record(join(std::string("read"), num(mono_now()), token, std::string(value ? "ok" : "refused"), num(value.value_or(-1))));
            if (hold_ms > 0) std::this_thread::sleep_for(ms(hold_ms));
            if (value) {
                const bool accepted = zkr::test::fenced_update(store, h->token, *value + 1);
                record(join(std::string("write"), num(mono_now()), token, std::string(accepted ? "accepted" : "refused")));
            }
        } else if (hold_ms > 0) {
            std::this_thread::sleep_for(ms(hold_ms));
        }
        const auto sent = mono_now();
        std::string outcome = "ok";
        try {
            h->confirm();
        } catch (const zkr::error& e) {
            outcome = e.code() == zkr::errc::lock_lost ? "lost" : "unknown";
        }
        record(join(std::string("confirm"), num(sent), num(mono_now()), token, outcome));
        const std::string state = h->state();
        boost::system::error_code ec;
        h->release(ec);
        record(join(std::string("release"), num(mono_now()), token, std::string(ec ? "error" : "ok"), state));
    }
}

// The token of the hold in progress, for the state lines of the hold listener.
std::atomic<std::int64_t> current_token{0};

// Records every state change of every hold the recipe grants (the partition tests time them).
template <typename Recipe>
zkr::state_subscription record_states(Recipe& r) {
    return r.add_hold_listener([](zkr::hold_state s) {
        record(join(std::string("state"), num(mono_now()), num(current_token.load()), std::string(zkr::to_string(s))));
    });
}

template <typename Lock>
std::function<std::optional<hold>(ms)> lock_acquirer(Lock& lock) {
    return [&lock](ms timeout) -> std::optional<hold> {
        if (!lock.acquire(timeout)) return std::nullopt;
        hold h;
        h.token = lock.fencing_token();
        current_token = h.token;
        h.confirm = [&lock] { lock.guarded_multi(confirm_ops()); };
        h.state = [&lock] { return std::string(zkr::to_string(lock.state())); };
        h.release = [&lock](boost::system::error_code& ec) {
            lock.release(ec);
        };
        return h;
    };
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 9) {
        std::cerr << "usage: zkr_fault_worker CONNECT mutex|fair|semaphore_mutex|semaphore:MAX PATH HISTORY STORE "
                     "STOP_FILE HOLD_MS SESSION_MS\n";
        return 2;
    }
    const std::string recipe = argv[2], path = argv[3], store = argv[5], stop_file = argv[6];
    const int hold_ms = std::atoi(argv[7]);
    history_fd = ::open(argv[4], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (history_fd < 0) return 4;
    try {
        zkr::client_options o;
        o.connect_string = argv[1];
        o.session_timeout = ms(std::atoi(argv[8]));
        o.connection_timeout = std::chrono::seconds(30);
        o.retry_policy = std::make_shared<zkr::exponential_backoff_retry>(ms(50), 10, ms(500));
        // zkr's and the C client's log, next to the history: the test shows its end when this
        // worker does not recover, and keeps it with the histories (ZKR_FAULT_KEEP).
        o.logger = spdlog::basic_logger_mt("worker", std::string(argv[4]) + ".log", /*truncate=*/true);
        o.logger->set_level(spdlog::level::debug);
        o.logger->flush_on(spdlog::level::debug);
        zkr::client c(o);
        auto sub = c.add_state_listener([&c](zkr::connection_state s) {
            if (zkr::is_connected(s)) note_session(c);
        });
        c.start();
        if (!c.block_until_connected(std::chrono::seconds(30))) return 3;
        if (recipe == "mutex") {
            zkr::interprocess_mutex m(c, path);
            auto states = record_states(m);
            run(c, lock_acquirer(m), true, store, stop_file, hold_ms);
        } else if (recipe == "mutex_cached") {  // lock caching: a worker takes its kept node back with no request
            zkr::interprocess_mutex m(c, path, zkr::mutex_options{.cache_hold = true});
            auto states = record_states(m);
            run(c, lock_acquirer(m), true, store, stop_file, hold_ms, 5 * hold_ms);
        } else if (recipe == "fair") {
            zkr::fair_lock f(c, path);
            auto states = record_states(f);
            run(c, lock_acquirer(f), true, store, stop_file, hold_ms);
        } else if (recipe == "semaphore_mutex") {
            zkr::interprocess_semaphore_mutex m(c, path);
            auto states = record_states(m);
            run(c, lock_acquirer(m), true, store, stop_file, hold_ms);
        } else if (recipe == "latch") {
            // One latch per term: a released term closes it (a closed latch cannot start again).
            std::unique_ptr<zkr::leader_latch> latch;
            zkr::state_subscription ended_sub;
            auto ended = std::make_shared<std::atomic<bool>>(false);  // the term ended before its release
            auto acquire = [&](ms timeout) -> std::optional<hold> {
                latch = std::make_unique<zkr::leader_latch>(c, path, "worker-" + std::to_string(::getpid()));
                ended = std::make_shared<std::atomic<bool>>(false);
                ended_sub = latch->add_listener([ended](bool leader) {
                    if (!leader) *ended = true;
                });
                latch->start();
                if (!latch->await_leadership(timeout)) {
                    latch->close();
                    return std::nullopt;
                }
                hold h;
                h.token = latch->fencing_token();
                current_token = h.token;
                h.confirm = [&] { latch->guarded_multi(confirm_ops()); };
                h.state = [&] { return std::string(zkr::to_string(latch->state())); };
                h.release = [&, ended](boost::system::error_code& ec) {
                    ec = *ended ? make_error_code(zkr::errc::lock_lost) : boost::system::error_code{};
                    latch->close();
                };
                return h;
            };
            run(c, acquire, true, store, stop_file, hold_ms);
        } else if (recipe == "unlocked") {
            auto acquire = [](ms) -> std::optional<hold> {
                hold h;
                h.token = mono_now();  // unique and rising, like a real token: only exclusion is missing
                h.confirm = [] {};
                h.state = [] { return std::string("held"); };
                h.release = [](boost::system::error_code&) {};
                return h;
            };
            run(c, acquire, true, store, stop_file, hold_ms);
        } else if (int max = 0; std::sscanf(recipe.c_str(), "semaphore:%d", &max) == 1) {
            zkr::interprocess_semaphore_v2 sem(c, path, max);
            auto states = record_states(sem);
            std::mt19937 rng(static_cast<unsigned>(::getpid()));
            std::vector<zkr::lease> leases;
            auto acquire = [&](ms timeout) -> std::optional<hold> {
                const int qty = std::uniform_int_distribution<int>(1, std::min(2, max))(rng);
                auto got = sem.acquire_many(qty, timeout);
                if (!got) return std::nullopt;
                leases = std::move(*got);
                hold h;
                h.token = leases.front().fencing_token();
                current_token = h.token;
                h.qty = qty;
                h.confirm = [&] { leases.front().guarded_multi(confirm_ops()); };
                h.state = [&] { return std::string(zkr::to_string(leases.front().state())); };
                h.release = [&](boost::system::error_code& ec) {
                    for (auto& l : leases) {
                        boost::system::error_code one;
                        l.close(one);
                        if (one && !ec) ec = one;
                    }
                    leases.clear();
                };
                return h;
            };
            run(c, acquire, false, store, stop_file, hold_ms);
        } else {
            return 2;
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "fault worker " << ::getpid() << ": " << e.what() << '\n';
        return 1;
    }
}
