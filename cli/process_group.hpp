// The command zkr lock runs, as a process group of its own: signals go to the whole group, and a
// guardian process stops the group if zkr itself dies, even by SIGKILL.
#pragma once

#include <sys/types.h>

#include <chrono>

namespace zkr::cli {

/// Blocks until one byte comes on fd (true) or its writer is gone (false), through signals.
/// Async-signal-safe: a forked child of zkr's threads may call it.
bool byte_arrives(int fd);

/// Sends sig to every process of the group (no-op once it is empty).
void signal_group(pid_t group, int sig);
/// True once no process of the group is left.
bool group_gone(pid_t group);

/// A process outside zkr's process group and session that holds the read end of a pipe. When
/// the write end closes without disarm(), zkr is gone (killed, crashed): the guardian sends
/// SIGTERM to the command's group, then SIGKILL after the grace period. PR_SET_PDEATHSIG alone
/// would reach only the command's first process, not what it started.
class guardian {
public:
    /// Starts the guardian (zkr's own binary, run as "zkr __guard"). Throws std::runtime_error.
    explicit guardian(std::chrono::milliseconds grace);
    ~guardian();
    guardian(const guardian&) = delete;
    guardian& operator=(const guardian&) = delete;
    /// From now on the guardian watches this group.
    void watch(pid_t group);
    /// zkr has stopped the group itself: the guardian exits without signalling.
    void disarm();

private:
    pid_t pid_ = -1;
    int pipe_ = -1;
};

/// The guardian's side, "zkr __guard GRACE_MS": reads the group from stdin, then waits for EOF.
int guard_main(long grace_ms);

}  // namespace zkr::cli
