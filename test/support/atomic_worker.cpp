// An atomic long's incrementer in a process of its own, for the atomic long's fault test: it
// increments the value at PATH (a zkr::distributed_atomic_long with receipts that outlive a
// session, promoted to a lock on PATH-lock, with a session of SESSION_MS) until COUNT increments
// succeeded (with "until STOP_FILE": and STOP_FILE exists, so that the fault test's processes
// increment for as long as its faults last, however fast the build runs), then appends one line
// to LOG (one write, O_APPEND) and exits 0:
//   done <succeeded> <not succeeded> <unknown> <other errors> <promoted> <ms of the increments>
// "unknown": an increment that threw session_expired (its outcome unknown); with these receipts
// there must be none. Every other error is counted, and its first message printed. With "bench"
// after LOG (bench/atomic_compare.py) the receipts are ephemeral, as a user's default.
// Usage: zkr_atomic_worker CONNECT SESSION_MS PATH COUNT LOG [bench | until STOP_FILE]
#include <zkr/distributed_atomic_long.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
    const bool bench = argc == 7 && std::string(argv[6]) == "bench";
    const bool until = argc == 8 && std::string(argv[6]) == "until";
    if (argc != 6 && !bench && !until) {
        std::cerr << "usage: zkr_atomic_worker CONNECT SESSION_MS PATH COUNT LOG [bench | until STOP_FILE]\n";
        return 2;
    }
    const std::string path = argv[3];
    const long count = std::atol(argv[4]);
    const auto go_on = [&](long succeeded) { return succeeded < count || (until && !std::filesystem::exists(argv[7])); };
    zkr::client_options o;
    o.connect_string = argv[1];
    o.session_timeout = std::chrono::milliseconds(std::atoi(argv[2]));
    zkr::client c(o);
    c.start();
    long succeeded = 0, refused = 0, unknown = 0, errors = 0, promoted = 0;
    long long ms = 0;
    {
        zkr::atomic_long_options options;
        options.promote_to_lock = zkr::atomic_promotion{path + "-lock", std::chrono::seconds(60), 10};
        if (!bench) options.receipt_ttl = std::chrono::minutes(10);
        zkr::distributed_atomic_long value(c, path, options);
        value.get();  // (connected, before the clock starts)
        const auto started = std::chrono::steady_clock::now();
        while (go_on(succeeded)) {
            try {
                const auto v = value.increment();
                (v.succeeded ? succeeded : refused) += 1;
                if (v.stats.promoted_tries) ++promoted;
            } catch (const zkr::error& e) {
                if (e.code() == zkr::errc::session_expired) ++unknown;
                else ++errors;
                if (unknown + errors == 1) std::cerr << "zkr_atomic_worker: " << e.what() << "\n";
            }
        }
        ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    }
    c.close();
    const std::string line = "done " + std::to_string(succeeded) + " " + std::to_string(refused) + " " + std::to_string(unknown) + " " +
                             std::to_string(errors) + " " + std::to_string(promoted) + " " + std::to_string(ms) + "\n";
    const int fd = ::open(argv[5], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 4;
    ::close(fd);
    return 0;
}
