#include "process_group.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>
#include <thread>

namespace zkr::cli {

void signal_group(pid_t group, int sig) {
    if (group > 0) ::kill(-group, sig);
}

bool group_gone(pid_t group) { return ::kill(-group, 0) != 0 && errno == ESRCH; }

guardian::guardian(std::chrono::milliseconds grace) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    // Made before the fork: the child of a threaded process must not allocate.
    std::string grace_ms = std::to_string(grace.count());
    char self[] = "/proc/self/exe";
    char name[] = "zkr";
    char guard[] = "__guard";
    char* argv[] = {name, guard, grace_ms.data(), nullptr};
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        ::setsid();  // outside zkr's process group: a kill of that group does not reach us
        ::dup2(fds[0], 0);  // dup2 clears close-on-exec on the copy
        ::close_range(3, ~0U, 0);  // zkr's ZooKeeper socket must close when zkr dies, not stay open here
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execv(self, argv);
        ::_exit(127);
    }
    ::close(fds[0]);
    pid_ = pid;
    pipe_ = fds[1];
}

guardian::~guardian() {
    if (pipe_ >= 0) ::close(pipe_);  // without disarm(): the guardian stops the group
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
}

void guardian::watch(pid_t group) {
    const std::int32_t g = group;
    if (::write(pipe_, &g, sizeof g) != static_cast<ssize_t>(sizeof g)) throw std::runtime_error("the guardian is gone");
}

bool byte_arrives(int fd) {
    char c = 0;
    ssize_t n;
    while ((n = ::read(fd, &c, 1)) < 0 && errno == EINTR) {
    }
    return n == 1;
}

void guardian::disarm() {
    if (pipe_ < 0) return;
    const char done = 'x';
    (void)!::write(pipe_, &done, 1);
    ::close(pipe_);
    pipe_ = -1;
}

int guard_main(long grace_ms) {
    // zkr's terminal and signals are not ours: only the pipe tells us to act.
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::signal(sig, SIG_IGN);
    std::int32_t group = 0;
    if (::read(0, &group, sizeof group) != static_cast<ssize_t>(sizeof group) || group <= 0) return 0;
    if (byte_arrives(0)) return 0;  // disarmed: zkr stopped the group itself
    // zkr is gone: the command must not run on unguarded.
    signal_group(group, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
    while (!group_gone(group) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!group_gone(group)) signal_group(group, SIGKILL);
    return 0;
}

}  // namespace zkr::cli
