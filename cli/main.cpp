// zkr: flock(1) for a cluster, and a look at who holds what.
//   zkr lock [options] PATH -- COMMAND [ARGS...]
//   zkr status [options] PATH
//   zkr demo [options]
#include "args.hpp"
#include "embedded_server.hpp"
#include "process_group.hpp"

#include <zkr/zkr.hpp>

#include "../recipes/lock_rule.hpp"  // zkr status names holders with the recipes' own rules
#include "../recipes/read_write_rule.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <iostream>
#include <sstream>
#include <string_view>
#include <thread>

namespace {

using namespace std::chrono_literals;
using zkr::cli::args;
using zkr::cli::flag;
using zkr::cli::usage_error;
using steady = std::chrono::steady_clock;

// Exit codes of our own (the child's status is passed through otherwise).
constexpr int exit_conflict = 1;  // lock held (-n) or wait timed out (-w); -E changes it
constexpr int exit_usage = 2;
constexpr int exit_zookeeper = 3;  // unreachable, or an error from ZooKeeper
// How long `zkr lock -n` gives a connect: a reachable server answers in far less.
constexpr std::chrono::milliseconds nonblocking_connect{1000};
constexpr int exit_lost = 4;       // the lock was lost while the command ran; --lost-exit-code changes it
constexpr int exit_cannot_run = 126;
constexpr int exit_not_found = 127;

/// A failure with its exit code and a message for stderr.
struct exit_error : std::runtime_error {
    exit_error(int c, const std::string& m) : std::runtime_error(m), code(c) {}
    int code;
};

const char* const lock_help = R"(usage: zkr lock [options] PATH -- COMMAND [ARGS...]

Runs COMMAND while holding the ZooKeeper lock PATH (or one of N leases with --max N), like
flock(1) for a cluster. Exits with COMMAND's exit status (128+N if a signal N ended it).

options:
  -w, --wait SECONDS        give up after SECONDS, the connect included (exit 1, or the -E
                            code; 3 when ZooKeeper cannot be reached in that time)
  -n, --nonblock            give up at once if the lock is held (the connect gets 1 s at most)
  -E, --conflict-exit-code CODE
                            exit code when giving up (default 1)
      --max N               a semaphore: at most N holders at once (default: a mutex)
      --grace SECONDS       when the lock is lost: SIGTERM, then SIGKILL after SECONDS (default 5)
      --lost-exit-code CODE exit code when the lock was lost while COMMAND ran (default 4)
      --connect HOSTS       ZooKeeper servers (default $ZKR_CONNECT, else 127.0.0.1:2181)
      --connect-timeout SECONDS
                            give up connecting after SECONDS (default 10; exit 3)
      --session-timeout SECONDS
                            the ZooKeeper session timeout (default 10)
  -h, --help                this text

COMMAND gets ZKR_LOCK_PATH (the lock node) and ZKR_FENCING_TOKEN (a number that rises with every
new holder; pass it to what you protect so it can refuse a stale holder). COMMAND runs in a process
group of its own (the terminal's foreground group when zkr has the terminal), and zkr stops that
whole group: SIGTERM, then SIGKILL after --grace, when the lock is lost, when COMMAND exits leaving
processes behind in it (before the lock is released), and when zkr itself dies, even by SIGKILL (a
guardian process watches zkr). SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to zkr are forwarded to
the group. While waiting, they give up the wait (nothing is left behind in ZooKeeper).

exit codes: COMMAND's status (128+N if a signal N ended it); 1 lock not acquired (-n, -w); 2 bad
usage; 3 ZooKeeper unreachable or failing; 4 the lock was lost and COMMAND was stopped; 126 COMMAND
cannot run; 127 not found; 128+N a signal N made zkr give up the wait (130 for SIGINT).
)";

const char* const status_help = R"(usage: zkr status [options] PATH

Shows who holds the lock or semaphore PATH, then the queue in order: each node's data (host:pid
for zkr's locks) and age.

options:
      --connect HOSTS       ZooKeeper servers (default $ZKR_CONNECT, else 127.0.0.1:2181)
      --connect-timeout SECONDS
                            give up connecting after SECONDS (default 10; exit 3)
  -h, --help                this text
)";

const char* const demo_help = R"(usage: zkr demo [options]

Starts a local ZooKeeper (unless --connect is given) and runs several processes that take one
fair lock in turn, printing each turn as it happens.

options:
      --workers N           processes (default 3)
      --rounds N            turns per process (default 2)
      --connect HOSTS       use these ZooKeeper servers instead of a local one
  -h, --help                this text
)";

const char* const main_help = R"(usage: zkr COMMAND [options]

commands:
  lock     run a command while holding a ZooKeeper lock or semaphore lease
  status   show the holders and the queue of a lock or semaphore
  demo     start a local ZooKeeper and watch processes take a fair lock in turn

zkr COMMAND --help shows a command's options.
)";

const std::vector<flag> connect_flags = {{"", "--connect", true}, {"", "--connect-timeout", true},
                                         {"", "--session-timeout", true}, {"-h", "--help", false}};

std::vector<flag> with_connect(std::vector<flag> f) {
    f.insert(f.end(), connect_flags.begin(), connect_flags.end());
    return f;
}

std::chrono::milliseconds seconds_to_ms(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

std::string connect_string(const args& a) {
    if (auto c = a.value("--connect")) {
        if (c->empty()) throw usage_error("--connect needs HOST:PORT[,HOST:PORT...]");
        return *c;
    }
    if (const char* env = std::getenv("ZKR_CONNECT"); env && *env) return env;
    return "127.0.0.1:2181";
}

std::string checked_path(const args& a, const char* command) {
    if (a.positionals().empty()) throw usage_error("needs a PATH");
    if (a.positionals().size() > 1) {
        std::string got;
        for (const auto& p : a.positionals()) got += " " + p;
        std::string hint;
        if (std::string_view(command) == "lock")
            hint = " (the command goes after \"--\", as in: zkr lock " + a.positionals()[0] + " -- COMMAND)";
        throw usage_error("needs exactly one PATH, got " + std::to_string(a.positionals().size()) + ":" + got + hint);
    }
    const auto& path = a.positionals()[0];
    if (auto e = zkr::path_error(path)) throw usage_error("bad PATH \"" + path + "\": " + *e);
    if (path == "/") throw usage_error("the root \"/\" cannot be a lock");
    return path;
}

// cap: the most the connect may take (zkr lock's -w and -n bound everything, the connect too).
std::unique_ptr<zkr::client> connect(const args& a, std::optional<std::chrono::milliseconds> cap = std::nullopt) {
    zkr::client_options o;
    o.connect_string = connect_string(a);
    o.session_timeout = seconds_to_ms(a.number("--session-timeout", 1, 600).value_or(10));
    auto limit = seconds_to_ms(a.number("--connect-timeout", 0.1, 3600).value_or(10));
    if (cap) limit = std::min(limit, *cap);
    std::unique_ptr<zkr::client> c;
    try {
        c = std::make_unique<zkr::client>(o);
    } catch (const zkr::error& e) {
        // The library's reason names the connect string already.
        throw usage_error(std::string("bad --connect: ") + e.what());
    }
    c->start();
    if (!c->block_until_connected(limit)) {
        std::ostringstream s;
        s << "cannot reach ZooKeeper at " << o.connect_string << " within " << static_cast<double>(limit.count()) / 1000
          << " s (give the servers with --connect or ZKR_CONNECT)";
        throw exit_error(exit_zookeeper, s.str());
    }
    return c;
}

// ---------------------------------------------------------------------------------------------
// zkr lock

/// Signals zkr handles itself: blocked in every thread, taken with sigtimedwait.
sigset_t handled_signals() {
    sigset_t s;
    sigemptyset(&s);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&s, sig);
    return s;
}

/// Waits up to `timeout` for a handled signal; 0 if none came.
int next_signal(std::chrono::milliseconds timeout, siginfo_t& info) {
    const sigset_t s = handled_signals();
    timespec ts{static_cast<time_t>(timeout.count() / 1000), static_cast<long>(timeout.count() % 1000) * 1000000};
    const int sig = ::sigtimedwait(&s, &info, &ts);
    return sig < 0 ? 0 : sig;
}

/// True when zkr runs in the terminal's foreground: the command then gets the terminal.
bool have_terminal() { return ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp(); }

/// Gives the terminal back to zkr's group once the command is gone.
void take_back_terminal() {
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    ::pthread_sigmask(SIG_BLOCK, &ttou, &old);
    ::tcsetpgrp(STDIN_FILENO, ::getpgrp());
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

/// Forks and execs the command, in a process group of its own, with the lock's environment;
/// throws exit_error when it cannot run.
pid_t start_command(const std::vector<std::string>& command, const std::string& node, std::int64_t token, bool take_terminal) {
    // Argument and environment arrays are made before the fork: zkr's client threads run, and
    // after fork() the child may only make async-signal-safe calls (a malloc or setenv there can
    // wait for ever on a lock another thread held at the fork).
    std::vector<std::string> env_strings = {"ZKR_LOCK_PATH=" + node, "ZKR_FENCING_TOKEN=" + std::to_string(token)};
    for (char** e = environ; *e; ++e) {
        const std::string_view v(*e);
        if (!v.starts_with("ZKR_LOCK_PATH=") && !v.starts_with("ZKR_FENCING_TOKEN=")) env_strings.emplace_back(v);
    }
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    int pipefd[2];
    if (::pipe2(pipefd, O_CLOEXEC) != 0) throw exit_error(exit_cannot_run, "pipe failed");
    const pid_t pid = ::fork();
    if (pid < 0) throw exit_error(exit_cannot_run, "fork failed");
    if (pid == 0) {
        ::close(pipefd[0]);
        ::setpgid(0, 0);  // a group of its own: zkr signals all the command started
        if (take_terminal) {
            // The terminal's keys (Ctrl-C) and reads then reach the command, as without zkr.
            // SIGTTOU is blocked: a background group may take the terminal only so.
            sigset_t ttou;
            sigemptyset(&ttou);
            sigaddset(&ttou, SIGTTOU);
            ::sigprocmask(SIG_BLOCK, &ttou, nullptr);
            ::tcsetpgrp(STDIN_FILENO, ::getpid());
        }
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execvpe(argv[0], argv.data(), envp.data());
        const int err = errno;
        (void)!::write(pipefd[1], &err, sizeof err);
        ::_exit(exit_not_found);
    }
    ::close(pipefd[1]);
    ::setpgid(pid, pid);  // also here, so the group exists before we signal it (fails once exec'd: fine)
    int err = 0;
    const bool exec_failed = ::read(pipefd[0], &err, sizeof err) == static_cast<ssize_t>(sizeof err);
    ::close(pipefd[0]);
    if (exec_failed) {
        ::waitpid(pid, nullptr, 0);
        const int code = err == ENOENT ? exit_not_found : exit_cannot_run;
        throw exit_error(code, "cannot run " + command[0] + ": " + std::strerror(err));
    }
    return pid;
}

int exit_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

/// The lock or lease zkr lock holds, whatever the recipe.
struct held {
    std::string node;
    std::int64_t token = 0;
    std::function<boost::system::error_code()> release;
};

int lock_command(const std::vector<std::string>& argv) {
    const args a(argv, with_connect({{"-w", "--wait", true},
                                     {"-n", "--nonblock", false},
                                     {"-E", "--conflict-exit-code", true},
                                     {"", "--max", true},
                                     {"", "--grace", true},
                                     {"", "--lost-exit-code", true}}));
    if (a.has("--help")) {
        std::cout << lock_help;
        return 0;
    }
    const auto path = checked_path(a, "lock");
    if (a.rest().empty()) throw usage_error("no COMMAND: give it after \"--\", as in: zkr lock " + path + " -- make deploy");
    if (a.has("--wait") && a.has("--nonblock")) throw usage_error("-w and -n exclude each other");
    const int conflict_code = static_cast<int>(a.number("--conflict-exit-code", 0, 255).value_or(exit_conflict));
    const int lost_code = static_cast<int>(a.number("--lost-exit-code", 0, 255).value_or(exit_lost));
    const auto max = a.number("--max", 1, 1e9);
    if (max && *max != static_cast<int>(*max)) throw usage_error("--max must be a whole number");
    const auto grace = seconds_to_ms(a.number("--grace", 0, 3600).value_or(5));
    std::optional<std::chrono::milliseconds> wait;
    if (a.has("--nonblock")) wait = 0ms;
    if (auto w = a.number("--wait", 0, 1e7)) wait = seconds_to_ms(*w);
    // -w caps everything, the connect included. -n (or -w 0) means now: one attempt to connect,
    // given the time a reachable server takes to answer, never the whole --connect-timeout.
    std::optional<std::chrono::milliseconds> connect_cap;
    if (wait) connect_cap = std::max(*wait, nonblocking_connect);
    const auto started = std::chrono::steady_clock::now();

    // Before any thread starts: the client's threads inherit the mask, so signals come to us here.
    const sigset_t handled = handled_signals();
    ::pthread_sigmask(SIG_BLOCK, &handled, nullptr);
    auto client = connect(a, connect_cap);
    if (wait && *wait > 0ms) {  // what is left of -w for the acquire
        const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
        wait = std::max(0ms, *wait - spent);
    }

    std::atomic<bool> lost{false};
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
            std::optional<zkr::lease> l = wait ? semaphore->acquire(*wait) : std::optional<zkr::lease>(semaphore->acquire());
            if (!l) return std::nullopt;
            auto shared = std::make_shared<zkr::lease>(std::move(*l));
            return held{shared->node_path(), shared->fencing_token(), [shared] {
                            boost::system::error_code ec;
                            shared->close(ec);
                            return ec;
                        }};
        });
    } else {
        mutex = std::make_unique<zkr::fair_lock>(*client, path);
        subscription = mutex->add_hold_listener(on_hold);
        cancel = [&] { mutex->cancel(); };
        acquiring = std::async(std::launch::async, [&]() -> std::optional<held> {
            if (!(wait ? mutex->acquire(*wait) : (mutex->lock(), true))) return std::nullopt;
            return held{mutex->node_path(), mutex->fencing_token(), [&] {
                            boost::system::error_code ec;
                            mutex->release(ec);
                            return ec;
                        }};
        });
    }
    siginfo_t info{};
    int interrupted = 0;
    // Short waits: the grant is noticed within 10 ms (a signal at once).
    while (acquiring.wait_for(0ms) != std::future_status::ready) {
        const int sig = next_signal(10ms, info);
        if (sig && sig != SIGCHLD && !interrupted) {
            interrupted = sig;
            cancel();  // the waiting acquire ends with `cancelled` and removes its node
        }
    }
    std::optional<held> h;
    try {
        h = acquiring.get();
    } catch (const zkr::error& e) {
        if (interrupted) return 128 + interrupted;
        throw exit_error(exit_zookeeper, std::string("acquiring ") + path + ": " + e.what());
    }
    if (interrupted) {  // the signal came as the lock was granted: give it back, run nothing
        if (h) h->release();
        return 128 + interrupted;
    }
    if (!h) {
        std::cerr << "zkr lock: " << path << (wait && wait->count() == 0 ? " is held" : " was not acquired in time") << '\n';
        return conflict_code;
    }

    // Orphans of the command are re-parented to us (not to init), so we reap them and can tell
    // when its group is empty.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    std::optional<zkr::cli::guardian> guard;
    try {
        guard.emplace(grace);
    } catch (const std::exception& e) {
        h->release();
        throw exit_error(exit_cannot_run, std::string("cannot start the guardian process: ") + e.what());
    }
    const bool terminal = have_terminal();
    const pid_t child = start_command(a.rest(), h->node, h->token, terminal);
    guard->watch(child);
    int status = 0;
    bool child_done = false, stopping = false, killed = false;
    steady::time_point kill_at = steady::time_point::max(), killed_at{};
    auto stop_group = [&](const std::string& why) {
        if (stopping) return;
        stopping = true;
        std::cerr << "zkr lock: " << why << "; stopping the command's process group\n";
        zkr::cli::signal_group(child, SIGTERM);
        kill_at = steady::now() + grace;
    };
    for (;;) {
        const int sig = next_signal(child_done ? 20ms : 100ms, info);
        for (int st = 0;;) {
            const pid_t p = ::waitpid(-1, &st, WNOHANG);
            if (p <= 0) break;
            if (p == child) {
                status = st;
                child_done = true;
            }
        }
        if (sig && sig != SIGCHLD) zkr::cli::signal_group(child, sig);
        if (lost) stop_group("lost the lock " + path + " (session lost, or its node deleted or written)");
        if (child_done) {
            if (zkr::cli::group_gone(child)) break;
            stop_group("the command exited, leaving processes in its group");
        }
        if (stopping && !killed && steady::now() >= kill_at) {
            zkr::cli::signal_group(child, SIGKILL);
            killed = true;
            killed_at = steady::now();
        }
        // A process that SIGKILL does not end (stuck in the kernel) cannot be waited for.
        if (killed && child_done && steady::now() - killed_at > 2s) break;
    }
    guard->disarm();
    if (terminal) take_back_terminal();
    const auto released = h->release();
    if (lost || released == zkr::errc::lock_lost) {
        if (!lost) std::cerr << "zkr lock: the lock " << path << " was lost while the command ran\n";
        return lost_code;
    }
    if (released) std::cerr << "zkr lock: releasing " << path << ": " << released.message() << " (its node goes with the session)\n";
    return exit_status(status);
}

// ---------------------------------------------------------------------------------------------
// zkr status

std::string age(std::int64_t since_ms) {
    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const double s = static_cast<double>(std::max<std::int64_t>(0, now - since_ms)) / 1000;
    char buf[32];
    if (s < 120) std::snprintf(buf, sizeof buf, "%.1fs", s);
    else if (s < 7200) std::snprintf(buf, sizeof buf, "%.0fm", s / 60);
    else std::snprintf(buf, sizeof buf, "%.1fh", s / 3600);
    return buf;
}

enum class queue_kind { mutex, semaphore, read_write };

// One kind's queue: who holds (the rule the recipes use, from the names alone), then who waits.
void print_queue(zkr::client& client, const std::string& path, const std::vector<std::string>& nodes, queue_kind which) {
    const bool is_semaphore = which == queue_kind::semaphore;
    std::size_t holders = zkr::lowest_n_rule(1).holders(nodes);
    std::string kind = "lock";
    if (which == queue_kind::read_write) {
        holders = zkr::read_write_rule(zkr::read_write_rule::side::read).holders(nodes);
        kind = "read-write lock";
    } else if (is_semaphore) {
        const auto tag = zkr::parse_lease_node(nodes[0]).value_or(zkr::lease_node_info{}).max_tag;
        if (const auto max = zkr::max_of_tag(tag); max && *max > 0) {
            holders = zkr::lease_rule([max = *max] { return max; }, tag).holders(nodes);
            kind = "semaphore of " + std::to_string(*max) + " leases";
        } else {
            holders = nodes.size();  // the maximum lives in a shared count we cannot name: list all as holding or waiting
            kind = "semaphore (maximum from a shared count)";
        }
    }
    const std::size_t holding = std::min(holders, nodes.size());
    std::cout << path << ": " << kind << ", " << holding << " holding, " << nodes.size() - holding << " waiting\n";
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto full = zkr::join_path(path, nodes[i]);
        boost::system::error_code e;
        const auto d = client.get_data(full, e);
        if (e) continue;  // gone meanwhile
        std::string role = i < holding ? "holding" : "waiting " + std::to_string(i - holding + 1);
        if (is_semaphore) {
            const auto w = zkr::parse_lease_node(nodes[i]).value_or(zkr::lease_node_info{}).weight;
            if (w > 1) role += " (" + std::to_string(w) + " leases)";
        }
        if (which == queue_kind::read_write) role += zkr::is_read_write_writer(nodes[i]) ? " (writer)" : " (reader)";
        std::printf("  %-22s %-50s %-24s %s  token %lld\n", role.c_str(), nodes[i].c_str(), d.data.empty() ? "-" : d.data.c_str(),
                    age(d.stat.ctime).c_str(), static_cast<long long>(d.stat.czxid));
    }
}

int status_command(const std::vector<std::string>& argv) {
    const args a(argv, connect_flags);
    if (a.has("--help")) {
        std::cout << status_help;
        return 0;
    }
    const auto path = checked_path(a, "status");
    auto client = connect(a);
    boost::system::error_code ec;
    const auto children = client->get_children(path, ec).children;
    if (ec == zkr::errc::no_node) {
        std::cout << path << ": free (no such node: nothing holds or waits)\n";
        return 0;
    }
    if (ec) throw exit_error(exit_zookeeper, "listing " + path + ": " + ec.message());
    // A lock's nodes end in "lock-<seq>", a semaphore's in "lease-<seq>", a read-write lock's in
    // "__READ__<seq>" or "__WRIT__<seq>". Two kinds on one path would not exclude each other (zkr
    // refuses to acquire there): show each, and say so.
    const auto locks = zkr::queue_of(children, {zkr::mutex_lock_name}).sorted;
    const auto leases = zkr::queue_of(children, {zkr::semaphore_lock_name}).sorted;
    const auto read_write = zkr::read_write_rule(zkr::read_write_rule::side::read).queue(children).sorted;
    const int kinds = !locks.empty() + !leases.empty() + !read_write.empty();
    if (kinds == 0) {
        if (children.empty()) std::cout << path << ": free (nothing holds or waits)\n";
        else std::cout << path << ": free (nothing holds or waits; " << children.size() << " other node" << (children.size() == 1 ? "" : "s")
                       << ", not zkr's lock or lease nodes)\n";
        return 0;
    }
    if (kinds > 1)
        std::cout << path << ": nodes of " << kinds << " kinds of lock (mutex, semaphore, read-write lock): they do not "
                             "exclude each other, so each may hold at once (zkr refuses new acquires here)\n";
    if (!locks.empty()) print_queue(*client, path, locks, queue_kind::mutex);
    if (!leases.empty()) print_queue(*client, path, leases, queue_kind::semaphore);
    if (!read_write.empty()) print_queue(*client, path, read_write, queue_kind::read_write);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// zkr demo

void say(const std::string& line) {
    const std::string l = line + "\n";
    (void)!::write(1, l.data(), l.size());  // one write per line: the processes' lines never mix
}

// A demo worker process: takes the fair lock `rounds` times, saying what it sees.
int demo_worker(const std::vector<std::string>& argv) {
    if (argv.size() != 4) throw usage_error("demo-worker CONNECT PATH ID ROUNDS");
    zkr::client_options o;
    o.connect_string = argv[0];
    zkr::client client(o);
    client.start();
    if (!client.block_until_connected(20s)) throw exit_error(exit_zookeeper, "worker cannot connect");
    zkr::fair_lock lock(client, argv[1]);
    const std::string me = "worker " + argv[2] + " (pid " + std::to_string(::getpid()) + ")";
    const int rounds = std::atoi(argv[3].c_str());
    for (int i = 0; i < rounds; ++i) {
        lock.lock();
        say("  " + me + " holds the lock, fencing token " + std::to_string(lock.fencing_token()) + ", " +
            std::to_string(lock.queue_length() - 1) + " waiting");
        std::this_thread::sleep_for(400ms);
        lock.unlock();
        std::this_thread::sleep_for(50ms);  // let the next in the queue take its turn
    }
    return 0;
}

int demo_command(const std::vector<std::string>& argv) {
    const args a(argv, with_connect({{"", "--workers", true}, {"", "--rounds", true}}));
    if (a.has("--help")) {
        std::cout << demo_help;
        return 0;
    }
    if (!a.positionals().empty()) throw usage_error("zkr demo takes no PATH (unexpected \"" + a.positionals()[0] + "\")");
    const int workers = static_cast<int>(a.number("--workers", 1, 50).value_or(3));
    const int rounds = static_cast<int>(a.number("--rounds", 1, 100).value_or(2));
    std::unique_ptr<zkr::cli::embedded_server> server;
    std::string connect_to;
    if (a.has("--connect") || std::getenv("ZKR_CONNECT")) {
        connect_to = connect_string(a);
        connect(a);  // fail early and clearly when it is not reachable
    } else {
        say("zkr demo: starting a local ZooKeeper (the Debian zookeeper package's server)...");
        server = std::make_unique<zkr::cli::embedded_server>();
        connect_to = server->connect_string();
        say("zkr demo: ZooKeeper serves at " + connect_to + "; it stops when the demo ends");
    }
    const std::string path = "/zkr-demo/lock-" + std::to_string(::getpid());
    say("zkr demo: " + std::to_string(workers) + " processes take the fair lock " + path + " in turn, " +
        std::to_string(rounds) + " time(s) each");
    std::vector<pid_t> children;
    for (int i = 1; i <= workers; ++i) {
        // Made before the fork (see start_command).
        const std::vector<std::string> args = {"zkr", "demo-worker", connect_to, path, std::to_string(i), std::to_string(rounds)};
        std::vector<char*> cargv;
        for (const auto& x : args) cargv.push_back(const_cast<char*>(x.c_str()));
        cargv.push_back(nullptr);
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::execv("/proc/self/exe", cargv.data());
            ::_exit(exit_cannot_run);
        }
        children.push_back(pid);
    }
    int failed = 0;
    for (const pid_t pid : children) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (exit_status(status) != 0) ++failed;
    }
    if (failed) throw exit_error(exit_zookeeper, std::to_string(failed) + " worker(s) failed");
    say("zkr demo: done: " + std::to_string(workers * rounds) + " turns, one holder at a time, in queue order");
    if (server) say("zkr demo: next, against your own ZooKeeper: zkr lock --connect HOST:PORT /my/lock -- COMMAND");
    else say("zkr demo: try it yourself: zkr lock --connect " + connect_to + " /my/lock -- sleep 5");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> all(argv + 1, argv + argc);
    if (all.empty() || all[0] == "-h" || all[0] == "--help" || all[0] == "help") {
        std::cout << main_help;
        return all.empty() ? exit_usage : 0;
    }
    const std::string command = all[0];
    const std::vector<std::string> rest(all.begin() + 1, all.end());
    try {
        if (command == "lock") return lock_command(rest);
        if (command == "status") return status_command(rest);
        if (command == "demo") return demo_command(rest);
        if (command == "demo-worker") return demo_worker(rest);
        if (command == "__guard" && rest.size() == 1) return zkr::cli::guard_main(std::stol(rest[0]));
        throw usage_error("unknown command \"" + command + "\" (try zkr --help)");
    } catch (const usage_error& e) {
        std::cerr << "zkr " << command << ": " << e.what() << '\n';
        return exit_usage;
    } catch (const exit_error& e) {
        std::cerr << "zkr " << command << ": " << e.what() << '\n';
        return e.code;
    } catch (const std::exception& e) {
        std::cerr << "zkr " << command << ": " << e.what() << '\n';
        return exit_zookeeper;
    }
}
