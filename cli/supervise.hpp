// Running a command while a hold lasts (zkr lock, zkr elect): the signals zkr takes itself, the
// command in a process group of its own, and the loop that stops that group when the hold is lost.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <vector>

namespace zkr::cli {

/// Signals zkr handles itself: blocked in every thread (block them before the client starts its
/// threads), taken with next_signal.
sigset_t handled_signals();
/// Waits up to `timeout` for a handled signal; 0 if none came.
int next_signal(std::chrono::milliseconds timeout, siginfo_t& info);

/// Waits for `acquiring` while taking the handled signals: the first one calls cancel() (the
/// acquire then ends, its node removed) and is kept in `interrupted`. Returns the future's value
/// (or throws its exception).
template <typename T>
T wait_interruptibly(std::future<T>& acquiring, const std::function<void()>& cancel, int& interrupted) {
    siginfo_t info{};
    // Short waits: the grant is noticed within 10 ms (a signal at once).
    while (acquiring.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
        const int sig = next_signal(std::chrono::milliseconds(10), info);
        if (sig && sig != SIGCHLD && !interrupted) {
            interrupted = sig;
            cancel();
        }
    }
    return acquiring.get();
}

/// What a command runs under: a lock, a lease, a term of leadership, or a registration.
struct held {
    std::string node;  ///< ZKR_LOCK_PATH
    std::int64_t token = 0;  ///< ZKR_FENCING_TOKEN
    std::function<boost::system::error_code()> release;
    /// The command's variables ("NAME=VALUE") instead of ZKR_LOCK_PATH and ZKR_FENCING_TOKEN, when
    /// not empty; they replace inherited ones of the same names.
    std::vector<std::string> environment;
};

/// How run_while_held tells and ends.
struct supervision {
    std::string who;   ///< "zkr lock": the prefix of its messages
    std::string what;  ///< "the lock /p", "leadership of /p"
    std::chrono::milliseconds grace{5000};
    int lost_code = 4;
    /// A revocable hold (zkr lock --revocable): reads true once a revocation request came. The
    /// command is then stopped as on loss, the hold released, and revoked_code returned.
    const std::atomic<bool>* revoked = nullptr;
    int revoked_code = 5;
    /// Why the hold was lost, for the message (default: "lost <what> (session lost, or its node
    /// deleted)").
    std::function<std::string()> lost_reason;
};

/// Runs command under h (a process group of its own, the terminal's foreground group when zkr has
/// the terminal, watched by a guardian process) until it exits and its group is empty; stops the
/// group (SIGTERM, SIGKILL after the grace) once `lost` reads true or the command left processes
/// behind, or a revocation request came (how.revoked); forwards handled signals to the group; then
/// releases h. Returns the command's exit status (128+N for signal N), lost_code when the hold
/// was lost, revoked_code when it was given up on request. Throws exit_error when the
/// command cannot run.
int run_while_held(held& h, const std::atomic<bool>& lost, const std::vector<std::string>& command, const supervision& how);

/// The exit status of a waitpid status: the code, or 128 + the signal.
int exit_status(int status);

}  // namespace zkr::cli
