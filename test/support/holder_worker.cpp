// A holder in a process of its own, for the holder's-contract tests: it takes a lock through a
// standard guard and waits inside the scope, as user code would, until the hold's stop_token is
// requested; then it leaves the scope (the guard releases) and exits 0. A release that throws
// through the guard ends the process with std::terminate (SIGABRT) instead.
// Usage: zkr_holder_worker CONNECT RECIPE GUARD PATH LOG SESSION_MS MODE
//   RECIPE: mutex | fair | semaphore_mutex | lease (a lease of a one-lease semaphore)
//   GUARD:  scoped (std::scoped_lock) | unique (std::unique_lock) | scope (a lease leaving its scope)
//   MODE:   stop   wait up to 30 s for the stop token, then leave the scope
//           close  as stop, but close the client 500 ms after acquiring (from another thread)
//           outage leave the scope once the hold is no longer held (the server went away), then
//                  stay until connected again and the node is gone (the pending delete ran)
// Writes lines to LOG (O_APPEND), each "<KIND> <pid> ...":
//   ACQ <pid> <token> <node path> <session id hex> <session password hex>
//   STOP <pid> <ms from ACQ>          the stop token was requested, seen inside the scope
//   NOSTOP <pid>                      it was not within 30 s (or, outage: not held any more)
//   LEFT <pid> <ms the scope's exit took>
//   RECONNECTED <pid>                 outage: connected again after leaving
//   GONE <pid>                        outage: the node was deleted while this session lives on
#include "client_hooks.hpp"  // the client's hooks for tests (src/)
#include "hex.hpp"
#include <zkr/detail/request.hpp>
#include <zkr/zkr.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

int log_fd = -1;

void log_line(const std::string& kind, const std::string& rest) {
    const std::string line = kind + " " + std::to_string(::getpid()) + (rest.empty() ? "" : " " + rest) + "\n";
    if (::write(log_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::abort();
}

long long ms_since(clk::time_point t) { return std::chrono::duration_cast<std::chrono::milliseconds>(clk::now() - t).count(); }

struct context {
    zkr::client& client;
    std::string mode;
    std::string node;
};

// What happens inside the scope, for any hold: report it, then wait as the mode says.
template <typename Hold>
void inside_scope(context& ctx, Hold& hold) {
    const auto acquired = clk::now();
    const auto [session, password] = zkr::detail::session_credentials(zkr::detail::connection_of(ctx.client));
    char session_hex[32];
    std::snprintf(session_hex, sizeof session_hex, "%llx", static_cast<unsigned long long>(session));
    ctx.node = hold.node_path();
    log_line("ACQ", std::to_string(hold.fencing_token()) + " " + ctx.node + " " + session_hex + " " + zkr::test::hex(password));
    std::jthread closer;
    if (ctx.mode == "close")
        closer = std::jthread([&] {
            std::this_thread::sleep_for(500ms);
            ctx.client.close();
        });
    const auto token = hold.stop_token();
    if (ctx.mode == "outage") {
        while (hold.state() == zkr::hold_state::held && ms_since(acquired) < 30'000) std::this_thread::sleep_for(5ms);
        log_line(hold.state() == zkr::hold_state::held ? "NOSTOP" : "DOUBT", {});
        return;
    }
    while (!token.stop_requested() && ms_since(acquired) < 30'000) std::this_thread::sleep_for(5ms);
    if (token.stop_requested()) log_line("STOP", std::to_string(ms_since(acquired)));
    else log_line("NOSTOP", {});
}

// The lock types of the holder: fencing_token, node_path and stop_token on the lock itself.
template <typename Lock>
struct lock_view {
    Lock& lock;
    std::int64_t fencing_token() const { return lock.fencing_token(); }
    std::string node_path() const { return lock.node_path(); }
    std::stop_token stop_token() const { return lock.stop_token(); }
    zkr::hold_state state() const { return lock.state(); }
};

template <typename Lock>
void hold_with_guard(context& ctx, Lock& lock, const std::string& guard) {
    lock_view<Lock> view{lock};
    clk::time_point leaving;
    if (guard == "scoped") {
        std::scoped_lock g(lock);
        inside_scope(ctx, view);
        leaving = clk::now();
    } else if (guard == "unique") {
        std::unique_lock g(lock);
        inside_scope(ctx, view);
        leaving = clk::now();
    } else {
        throw std::invalid_argument("GUARD must be scoped or unique for a lock, got " + guard);
    }
    log_line("LEFT", std::to_string(ms_since(leaving)));
}

void after_outage(zkr::client& c, const std::string& node) {
    for (int i = 0; i < 6000 && !zkr::is_connected(c.state()); ++i) std::this_thread::sleep_for(10ms);
    if (!zkr::is_connected(c.state())) return;
    log_line("RECONNECTED", {});
    for (int i = 0; i < 100; ++i) {
        boost::system::error_code ec;
        const bool there = c.exists(node, ec).has_value();
        if (!ec && !there) return log_line("GONE", {});
        std::this_thread::sleep_for(100ms);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8) {
        std::cerr << "usage: zkr_holder_worker CONNECT mutex|fair|semaphore_mutex|lease scoped|unique|scope PATH LOG SESSION_MS "
                     "stop|close|outage\n";
        return 2;
    }
    log_fd = ::open(argv[5], O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (log_fd < 0) return 4;
    try {
        zkr::client_options o;
        o.connect_string = argv[1];
        o.session_timeout = std::chrono::milliseconds(std::stoi(argv[6]));
        o.connection_timeout = 5s;
        o.retry_policy = std::make_shared<zkr::exponential_backoff_retry>(std::chrono::milliseconds(50), 5, 500ms);
        zkr::client c(o);
        c.start();
        if (!c.block_until_connected(20s)) return 3;
        const std::string recipe = argv[2], guard = argv[3], path = argv[4];
        context ctx{c, argv[7]};
        if (recipe == "mutex") {
            zkr::interprocess_mutex m(c, path);
            hold_with_guard(ctx, m, guard);
        } else if (recipe == "fair") {
            zkr::fair_lock f(c, path);
            hold_with_guard(ctx, f, guard);
        } else if (recipe == "semaphore_mutex") {
            zkr::interprocess_semaphore_mutex m(c, path);
            hold_with_guard(ctx, m, guard);
        } else if (recipe == "lease") {
            zkr::interprocess_semaphore_v2 sem(c, path, 1);
            clk::time_point leaving;
            {
                zkr::lease l = sem.acquire();
                inside_scope(ctx, l);
                leaving = clk::now();
            }
            log_line("LEFT", std::to_string(ms_since(leaving)));
        } else {
            std::cerr << "unknown recipe " << recipe << '\n';
            return 2;
        }
        if (ctx.mode == "outage") after_outage(c, ctx.node);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "holder " << ::getpid() << ": " << e.what() << '\n';
        return 1;
    }
}
