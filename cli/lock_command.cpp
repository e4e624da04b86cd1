// zkr lock: runs a command while holding a lock or a semaphore lease, like flock(1) for a cluster.
#include "commands.hpp"
#include "supervise.hpp"

#include <zkr/fair_lock.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>

#include <pthread.h>

#include <future>
#include <iostream>

namespace zkr::cli {

namespace {

using namespace std::chrono_literals;

// How long `zkr lock -n` gives a connect: a reachable server answers in far less.
constexpr std::chrono::milliseconds nonblocking_connect{1000};

struct lock_command final : command {
    connection_options connection;
    std::vector<std::string> paths;
    std::optional<double> wait, max;
    bool nonblock = false, revocable = false;
    double conflict_code = exit_conflict, lost_code = exit_lost, grace = 5;

    int run(const std::vector<std::string>& rest) override;
};

int lock_command::run(const std::vector<std::string>& rest) {
    const auto path = checked_path(paths, "lock");
    if (rest.empty()) throw usage_error("no COMMAND: give it after \"--\", as in: zkr lock " + path + " -- make deploy");
    if (wait && nonblock) throw usage_error("-w and -n exclude each other");
    if (revocable && max) throw usage_error("--revocable takes a lock, not a semaphore (--max): only locks can be revoked");
    std::optional<std::chrono::milliseconds> timeout;
    if (nonblock) timeout = 0ms;
    if (wait) timeout = seconds_to_ms(*wait);
    // -w caps everything, the connect included. -n (or -w 0) means now: one attempt to connect,
    // given the time a reachable server takes to answer, never the whole --connect-timeout.
    std::optional<std::chrono::milliseconds> connect_cap;
    if (timeout) connect_cap = std::max(*timeout, nonblocking_connect);
    const auto started = std::chrono::steady_clock::now();

    // Before any thread starts: the client's threads inherit the mask, so signals come to us here.
    const sigset_t handled = handled_signals();
    ::pthread_sigmask(SIG_BLOCK, &handled, nullptr);
    auto client = connection.connect(connect_cap);
    if (timeout && *timeout > 0ms) {  // what is left of -w for the acquire
        const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
        timeout = std::max(0ms, *timeout - spent);
    }

    std::atomic<bool> lost{false}, revoked{false};
    auto on_hold = [&lost](zkr::hold_state s) {
        if (s == zkr::hold_state::lost) lost = true;
    };
    // Without --max: a fair_lock. It is the same protocol as interprocess_mutex (so both exclude
    // each other on one path), and any thread may release it.
    std::unique_ptr<zkr::fair_lock> mutex;
    std::unique_ptr<zkr::interprocess_semaphore_v2> semaphore;
    zkr::state_subscription subscription;
    std::function<void()> cancel;
    std::future<std::optional<held>> acquiring;
    if (max) {
        semaphore = std::make_unique<zkr::interprocess_semaphore_v2>(*client, path, static_cast<std::int32_t>(*max));
        subscription = semaphore->add_hold_listener(on_hold);
        cancel = [&] { semaphore->cancel(); };
        acquiring = std::async(std::launch::async, [&]() -> std::optional<held> {
            std::optional<zkr::lease> l = timeout ? semaphore->acquire(*timeout) : std::optional<zkr::lease>(semaphore->acquire());
            if (!l) return std::nullopt;
            auto shared = std::make_shared<zkr::lease>(std::move(*l));
            return held{shared->node_path(), shared->fencing_token(), [shared] {
                            boost::system::error_code ec;
                            shared->close(ec);
                            return ec;
                        }};
        });
    } else {
        mutex = revocable ? std::make_unique<zkr::fair_lock>(*client, path, [&revoked] { revoked = true; })
                          : std::make_unique<zkr::fair_lock>(*client, path);
        subscription = mutex->add_hold_listener(on_hold);
        cancel = [&] { mutex->cancel(); };
        acquiring = std::async(std::launch::async, [&]() -> std::optional<held> {
            if (!(timeout ? mutex->acquire(*timeout) : (mutex->lock(), true))) return std::nullopt;
            return held{mutex->node_path(), mutex->fencing_token(), [&] {
                            boost::system::error_code ec;
                            mutex->release(ec);
                            return ec;
                        }};
        });
    }
    int interrupted = 0;
    std::optional<held> h;
    try {
        h = wait_interruptibly(acquiring, cancel, interrupted);
    } catch (const zkr::error& e) {
        if (interrupted) return 128 + interrupted;
        // Another kind of lock on the path, or a semaphore of another maximum: the command line
        // asked for what the path cannot be (exit 2), not a failing ZooKeeper (3).
        const bool misfit = e.code() == zkr::errc::lock_kind_mismatch || e.code() == zkr::errc::max_mismatch;
        throw exit_error(misfit ? exit_usage : exit_zookeeper, std::string("acquiring ") + path + ": " + e.what());
    }
    if (interrupted) {  // the signal came as the lock was granted: give it back, run nothing
        if (h) h->release();
        return 128 + interrupted;
    }
    if (!h) {
        std::cerr << "zkr lock: " << path << (timeout && timeout->count() == 0 ? " is held" : " was not acquired in time") << '\n';
        return static_cast<int>(conflict_code);
    }
    return run_while_held(*h, lost, rest,
                          {"zkr lock", "the lock " + path, seconds_to_ms(grace), static_cast<int>(lost_code),
                           revocable ? &revoked : nullptr, exit_revoked});
}

}  // namespace

std::unique_ptr<command> add_lock_command(CLI::App& app) {
    auto cmd = std::make_unique<lock_command>();
    auto* sub = app.add_subcommand("lock", "run a command while holding a ZooKeeper lock or semaphore lease");
    sub->add_option("PATH", cmd->paths, "the lock's path")->type_name("");
    add_number(*sub, "-w,--wait", cmd->wait, 0, 1e7,
               "give up after SECONDS, the connect included (exit 1, or the -E code; 3 when ZooKeeper cannot be reached in that time)")
        ->type_name("SECONDS");
    sub->add_flag("-n,--nonblock", cmd->nonblock, "give up at once if the lock is held (the connect gets 1 s at most)");
    sub->add_flag("--revocable", cmd->revocable,
                  "let go when asked (zkr revoke, Curator's Revoker): stop COMMAND as on loss, release, exit 5");
    add_number(*sub, "-E,--conflict-exit-code", cmd->conflict_code, 0, 255, "exit code when giving up (default 1)", true)->type_name("CODE");
    add_number(*sub, "--max", cmd->max, 1, 1e9, "a semaphore: at most N holders at once (default: a mutex)", true)->type_name("N");
    add_supervision_options(*sub, cmd->grace, cmd->lost_code, "the lock");
    cmd->connection.add_to(*sub);
    sub->footer(
        "Runs COMMAND while holding the ZooKeeper lock PATH (or one of N leases with --max N), like\n"
        "flock(1) for a cluster. Exits with COMMAND's exit status (128+N if a signal N ended it)." "\n\n"
        "COMMAND gets ZKR_LOCK_PATH (the lock node) and ZKR_FENCING_TOKEN (a number that rises with every\n"
        "new holder; pass it to what you protect so it can refuse a stale holder). COMMAND runs in a process\n"
        "group of its own (the terminal's foreground group when zkr has the terminal), and zkr stops that\n"
        "whole group: SIGTERM, then SIGKILL after --grace, when the lock is lost, when COMMAND exits leaving\n"
        "processes behind in it (before the lock is released), and when zkr itself dies, even by SIGKILL (a\n"
        "guardian process watches zkr). SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to zkr are forwarded to\n"
        "the group. While waiting, they give up the wait (nothing is left behind in ZooKeeper).\n\n"
        "exit codes: COMMAND's status (128+N if a signal N ended it); 1 lock not acquired (-n, -w); 2 bad\n"
        "usage (also: another kind of lock, or another --max, on PATH); 3 ZooKeeper unreachable or failing; 4 the lock was lost and COMMAND was stopped; 5 a revocation\n"
        "request came (--revocable) and COMMAND was stopped; 126 COMMAND cannot run; 127 not found; 128+N a\n"
        "signal N made zkr give up the wait (130 for SIGINT).");
    return cmd;
}

}  // namespace zkr::cli
