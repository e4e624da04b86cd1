#include "supervise.hpp"

#include "command_line.hpp"
#include "process_group.hpp"

#include <zkr/error.hpp>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <string_view>

namespace zkr::cli {

namespace {
using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;
}  // namespace

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

namespace {

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

void close_pipe(const int (&fds)[2]) {
    ::close(fds[0]);
    ::close(fds[1]);
}

/// Forks and execs the command, in a process group of its own, with the lock's environment;
/// throws exit_error when it cannot run. The command runs only once the guardian watches its
/// group: a zkr killed before that (SIGKILL right after the fork) leaves no command unguarded.
pid_t start_command(const std::vector<std::string>& command, const held& h, bool take_terminal, zkr::cli::guardian& guard) {
    // Argument and environment arrays are made before the fork: zkr's client threads run, and
    // after fork() the child may only make async-signal-safe calls (a malloc or setenv there can
    // wait for ever on a lock another thread held at the fork).
    std::vector<std::string> env_strings = h.environment;
    if (env_strings.empty()) env_strings = {"ZKR_LOCK_PATH=" + h.node, "ZKR_FENCING_TOKEN=" + std::to_string(h.token)};
    const auto ours = env_strings.size();
    for (char** e = environ; *e; ++e) {
        const std::string_view v(*e);
        const auto same_name = [&](const std::string& mine) { return v.substr(0, v.find('=') + 1) == mine.substr(0, mine.find('=') + 1); };
        if (std::none_of(env_strings.begin(), env_strings.begin() + static_cast<long>(ours), same_name)) env_strings.emplace_back(v);
    }
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    int pipefd[2];  // the exec's failure, child to parent
    int gofd[2];    // "the guardian watches your group", parent to child
    if (::pipe2(pipefd, O_CLOEXEC) != 0) throw exit_error(exit_cannot_run, "pipe failed");
    if (::pipe2(gofd, O_CLOEXEC) != 0) {
        close_pipe(pipefd);
        throw exit_error(exit_cannot_run, "pipe failed");
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        close_pipe(pipefd);
        close_pipe(gofd);
        throw exit_error(exit_cannot_run, "fork failed");
    }
    if (pid == 0) {
        ::close(pipefd[0]);
        ::close(gofd[1]);
        ::setpgid(0, 0);  // a group of its own: zkr signals all the command started
        // Wait until the guardian watches the group; zkr gone before that (no byte): never run.
        if (!byte_arrives(gofd[0])) ::_exit(exit_cannot_run);
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
    ::close(gofd[0]);
    ::setpgid(pid, pid);  // also here, so the group exists before we signal it (fails once exec'd: fine)
    try {
        guard.watch(pid);
    } catch (const std::exception& e) {
        ::close(gofd[1]);  // the child exits without running the command
        ::close(pipefd[0]);
        ::waitpid(pid, nullptr, 0);
        throw exit_error(exit_cannot_run, std::string("cannot guard the command: ") + e.what());
    }
    const char go = 'g';
    (void)!::write(gofd[1], &go, 1);
    ::close(gofd[1]);
    int err = 0;
    const bool exec_failed = ::read(pipefd[0], &err, sizeof err) == static_cast<ssize_t>(sizeof err);
    ::close(pipefd[0]);
    if (exec_failed) {
        ::waitpid(pid, nullptr, 0);
        guard.disarm();  // nothing of the command runs
        const int code = err == ENOENT ? exit_not_found : exit_cannot_run;
        throw exit_error(code, "cannot run " + command[0] + ": " + std::strerror(err));
    }
    return pid;
}

}  // namespace

int exit_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

int run_while_held(held& h, const std::atomic<bool>& lost, const std::vector<std::string>& command, const supervision& how) {
    siginfo_t info{};
    // Orphans of the command are re-parented to us (not to init), so we reap them and can tell
    // when its group is empty.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    std::optional<zkr::cli::guardian> guard;
    try {
        guard.emplace(how.grace);
    } catch (const std::exception& e) {
        h.release();
        throw exit_error(exit_cannot_run, std::string("cannot start the guardian process: ") + e.what());
    }
    const bool terminal = have_terminal();
    const pid_t child = start_command(command, h, terminal, *guard);
    int status = 0;
    bool child_done = false, stopping = false, killed = false;
    steady::time_point kill_at = steady::time_point::max(), killed_at{};
    auto stop_group = [&](const std::string& why) {
        if (stopping) return;
        stopping = true;
        std::cerr << how.who << ": " << why << "; stopping the command's process group\n";
        zkr::cli::signal_group(child, SIGTERM);
        kill_at = steady::now() + how.grace;
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
        if (lost) stop_group(how.lost_reason ? how.lost_reason() : "lost " + how.what + " (session lost, or its node deleted)");
        if (how.revoked && *how.revoked) stop_group("asked to let go of " + how.what + " (a revocation request)");
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
    const auto released = h.release();
    if (lost || released == zkr::errc::lock_lost) {
        if (!lost) std::cerr << how.who << ": " << how.what << " was lost while the command ran\n";
        return how.lost_code;
    }
    if (released) std::cerr << how.who << ": releasing " << how.what << ": " << released.message() << " (its node goes with the session)\n";
    if (how.revoked && *how.revoked) return how.revoked_code;
    return exit_status(status);
}

}  // namespace zkr::cli
