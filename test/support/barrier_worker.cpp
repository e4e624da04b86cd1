// A double barrier's member in a process of its own, for the double barrier's fault test: for each
// round r of ROUNDS it enters the barrier BASE/r<r> of MEMBERS members (a zkr::double_barrier,
// with a session of SESSION_MS), works for HOLD_MS, and leaves it, appending to LOG (one write per line,
// O_APPEND, so the file's order is the real order) around each step:
//   entering <pid> <r>   before it enters      entered <pid> <r>   once enter returned
//   leaving <pid> <r>    before it leaves      left <pid> <r>      once leave returned
// each line ending with the monotonic clock in ns (CLOCK_MONOTONIC, for bench/barrier_compare.py),
// then exits 0. An error is logged as "error <pid> <r> <ns> <message>" and ends it with 1.
// Usage: zkr_barrier_worker CONNECT SESSION_MS BASE MEMBERS ROUNDS HOLD_MS LOG
#include <zkr/double_barrier.hpp>
#include <zkr/error.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

namespace {

int log_fd = -1;

void log_line(const std::string& what, int round, const std::string& rest = {}) {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
    const std::string line = what + " " + std::to_string(::getpid()) + " " + std::to_string(round) + " " + std::to_string(ns) +
                             (rest.empty() ? "" : " " + rest) + "\n";
    if (::write(log_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::abort();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8) {
        std::cerr << "usage: zkr_barrier_worker CONNECT SESSION_MS BASE MEMBERS ROUNDS HOLD_MS LOG\n";
        return 2;
    }
    log_fd = ::open(argv[7], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0) return 4;
    const std::string base = argv[3];
    const auto members = static_cast<std::size_t>(std::atol(argv[4]));
    const int rounds = std::atoi(argv[5]);
    const std::chrono::milliseconds hold(std::atoi(argv[6]));
    zkr::client_options o;
    o.connect_string = argv[1];
    o.session_timeout = std::chrono::milliseconds(std::atoi(argv[2]));
    zkr::client c(o);
    c.start();
    int round = 0;
    try {
        for (; round < rounds; ++round) {
            zkr::double_barrier barrier(c, base + "/r" + std::to_string(round), members);
            log_line("entering", round);
            barrier.enter();
            log_line("entered", round);
            std::this_thread::sleep_for(hold);
            log_line("leaving", round);
            barrier.leave();
            log_line("left", round);
        }
    } catch (const zkr::error& e) {
        log_line("error", round, e.what());
        return 1;
    }
    c.close();
    return 0;
}
