// A group member in a process of its own, for the nodes' fault tests: it joins the group at GROUP
// as ID with the data DATA (a zkr::group_member, with a session of SESSION_MS), and appends to LOG
// (one write per line, O_APPEND) each change of the members it sees (itself always among them):
//   members <ms since start> <ids, sorted, comma-separated>
// On SIGTERM or SIGINT it leaves the group (close), writes "left <ms> -" and exits 0. zkr's and the
// C client's log go to LOG.log (debug), for the test to show when a check fails.
// Usage: zkr_member_worker CONNECT SESSION_MS GROUP ID DATA LOG
#include <zkr/group_member.hpp>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

namespace {

int log_fd = -1;
const auto started = std::chrono::steady_clock::now();

void log_line(const std::string& kind, const std::string& rest) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    const std::string line = kind + " " + std::to_string(ms) + " " + rest + "\n";
    if (::write(log_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::abort();
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 7) {
        std::cerr << "usage: zkr_member_worker CONNECT SESSION_MS GROUP ID DATA LOG\n";
        return 2;
    }
    log_fd = ::open(argv[6], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0) return 4;
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before the client's threads start
    zkr::client_options o;
    o.connect_string = argv[1];
    o.session_timeout = std::chrono::milliseconds(std::atoi(argv[2]));
    o.logger = spdlog::basic_logger_mt("member", std::string(argv[6]) + ".log", /*truncate=*/true);
    o.logger->set_level(spdlog::level::debug);
    o.logger->flush_on(spdlog::level::debug);
    zkr::client c(o);
    c.start();
    zkr::group_member member(c, argv[3], argv[4], argv[5]);
    std::string last_members = "?";  // (the listener runs on the one callback thread)
    auto sub = member.add_listener([&](const zkr::cache_event&) {
        std::string ids;
        for (const auto& [id, data] : member.current_members()) ids += (ids.empty() ? "" : ",") + id;
        if (ids != last_members) log_line("members", ids);
        last_members = ids;
    });
    member.start();
    int sig = 0;
    sigwait(&stop, &sig);
    sub.unsubscribe();
    const bool gone = member.close();
    c.close();  // (its threads stopped: no listener call still runs when member goes)
    log_line("left", gone ? "deleted" : "not-deleted");
    return 0;
}
