// A separate process contending on a recipe, for the multi-process tests.
// Usage: zkr_lock_worker CONNECT RECIPE PATH ITERATIONS HOLD_MS LOG_FILE COUNTER_FILE
// (session: 4 s, or ZKR_WORKER_SESSION_MS)
//   RECIPE: mutex | fair | semaphore_mutex | semaphore:MAX:QTY (QTY 0: random 1..MAX each time)
//           | curator_semaphore:MAX:QTY (the same in Curator's layout, semaphore_layout::curator)
//           | shared_semaphore:COUNT_PATH (one lease at a time of a semaphore whose maximum is the
//             shared count at COUNT_PATH, which the test has made)
//           | kazoo_mutex (a mutex that queues behind Kazoo's Lock nodes too)
//           | latch: a leader_latch (ITERATIONS is ignored): logs "ACQ <pid> <epoch> 1" once it
//             leads, "REL <pid> <epoch> 1" after HOLD_MS, then closes the latch and exits
//           | selector: a leader_selector (ITERATIONS is ignored) whose take_leadership logs "ACQ <pid>
//             <epoch> 1", holds HOLD_MS and logs "REL <pid> <epoch> 1"; exits after that one term
//           | multi | multi_reversed: an interprocess_multi_lock over PATH, a comma-separated list of
//             lock paths, listed in that order or reversed; the token logged is the first member's
//             (in path order, so every holder's tokens are of one lock)
//           | rw:PCT: a read-write lock, each acquire a writer with PCT% chance (else a reader);
//             logs "RACQ|WACQ <pid> <token>" and "RREL|WREL <pid> <token>", and a writer does the
//             counter's read-modify-write; rw_downgrade: each iteration takes the write lock, then
//             the read lock, releases the write lock and holds the read lock HOLD_MS more
//           | view_job: hold the mutex in a std::scoped_lock for HOLD_MS while a job thread, given
//             the hold's view, logs "WRITE|SKIP <pid> <steady ms>" every 20 ms (WRITE only when
//             the view reads held)
//           | unowned_unlock: lock the mutex, unlock() it from another thread (misuse: reported on
//             stderr, asserted in debug builds), log "AFTER <pid> <state>", unlock it properly
//           | fenced: acquire the mutex once, log "ACQ", sleep HOLD_MS (a test may SIGSTOP us then),
//             log "STATE <hold state>", try one fenced write to COUNTER_FILE (a fenced store, see
//             fenced_store.hpp) and log "WRITE accepted|refused"; ITERATIONS is ignored
// Appends "ACQ <pid> <token> <qty>" after each acquire, "REL <pid> <token> <qty>" before each
// release and (mutex, fair, semaphore_mutex) "UNLOCKED <pid> <ms unlock() took>" after it to LOG_FILE (O_APPEND: one write per line, so the file order is a real-time order), and
// does a read-modify-write of the number in COUNTER_FILE while holding. Exit code 0 on success.
#include "fenced_store.hpp"

#include <zkr/zkr.hpp>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <future>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <thread>

namespace {

void append_line(int fd, const std::string& line) {
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::abort();
}

// Deliberately not atomic: overlapping holders lose updates.
void increment(const std::string& file) {
    long value = 0;
    if (FILE* f = std::fopen(file.c_str(), "r")) {
        if (std::fscanf(f, "%ld", &value) != 1) value = 0;
        std::fclose(f);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (FILE* f = std::fopen(file.c_str(), "w")) {
        std::fprintf(f, "%ld\n", value + 1);
        std::fclose(f);
    }
}

std::string log_line(const char* kind, std::int64_t token, int qty) {
    return std::string(kind) + " " + std::to_string(::getpid()) + " " + std::to_string(token) + " " + std::to_string(qty) + "\n";
}

std::int64_t first_token(zkr::interprocess_multi_lock& lock) { return lock.fencing_tokens().at(0); }
template <typename Lock>
std::int64_t first_token(Lock& lock) {
    return lock.fencing_token();
}

template <typename Lock>
int run(Lock& lock, int iterations, int hold_ms, int log, const std::string& counter) {
    for (int i = 0; i < iterations; ++i) {
        lock.lock();
        const auto token = first_token(lock);
        append_line(log, log_line("ACQ", token, 1));
        increment(counter);
        if (hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
        append_line(log, log_line("REL", token, 1));
        const auto leaving = std::chrono::steady_clock::now();
        lock.unlock();
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - leaving).count();
        append_line(log, "UNLOCKED " + std::to_string(::getpid()) + " " + std::to_string(ms) + "\n");
    }
    return 0;
}

int run_read_write(zkr::interprocess_read_write_lock& rw, int write_pct, bool downgrade, int iterations, int hold_ms, int log,
                   const std::string& counter) {
    std::mt19937 rng(static_cast<unsigned>(::getpid()));
    std::uniform_int_distribution<int> percent(0, 99);
    const auto pause = [&] {
        if (hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    };
    for (int i = 0; i < iterations; ++i) {
        if (downgrade || percent(rng) < write_pct) {
            std::unique_lock write(rw.write_lock());
            const auto token = rw.write_lock().fencing_token();
            append_line(log, "WACQ " + std::to_string(::getpid()) + " " + std::to_string(token) + "\n");
            increment(counter);
            pause();
            if (!downgrade) {
                append_line(log, "WREL " + std::to_string(::getpid()) + " " + std::to_string(token) + "\n");
                continue;
            }
            std::unique_lock read(rw.read_lock());  // at once: behind our own writer
            const auto read_token = rw.read_lock().fencing_token();
            append_line(log, "WREL " + std::to_string(::getpid()) + " " + std::to_string(token) + "\n");
            append_line(log, "RACQ " + std::to_string(::getpid()) + " " + std::to_string(read_token) + "\n");
            write.unlock();
            pause();
            append_line(log, "RREL " + std::to_string(::getpid()) + " " + std::to_string(read_token) + "\n");
            continue;
        }
        std::unique_lock read(rw.read_lock());
        const auto token = rw.read_lock().fencing_token();
        append_line(log, "RACQ " + std::to_string(::getpid()) + " " + std::to_string(token) + "\n");
        pause();
        append_line(log, "RREL " + std::to_string(::getpid()) + " " + std::to_string(token) + "\n");
    }
    return 0;
}

// Several holders at once: no counter (its read-modify-write would race by design).
int run_semaphore(zkr::interprocess_semaphore_v2& sem, int qty, int iterations, int hold_ms, int log) {
    std::mt19937 rng(static_cast<unsigned>(::getpid()));
    std::uniform_int_distribution<int> random_qty(1, sem.max_leases());
    for (int i = 0; i < iterations; ++i) {
        const int n = qty > 0 ? qty : random_qty(rng);
        auto leases = sem.acquire_many(n);
        const auto token = leases.at(0).fencing_token();
        append_line(log, log_line("ACQ", token, n));
        if (hold_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
        append_line(log, log_line("REL", token, n));
        for (auto& l : leases) l.close();
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 8) {
        std::cerr << "usage: zkr_lock_worker CONNECT mutex|fair|semaphore_mutex|semaphore:MAX:QTY PATH ITERATIONS HOLD_MS "
                     "LOG_FILE COUNTER_FILE\n";
        return 2;
    }
    try {
        zkr::client_options o;
        o.connect_string = argv[1];
        o.session_timeout = std::chrono::seconds(4);
        // A test whose outage must not end the session (a server's restart takes seconds in the
        // sanitized builds) asks for a longer one.
        if (const char* ms = std::getenv("ZKR_WORKER_SESSION_MS")) o.session_timeout = std::chrono::milliseconds(std::atol(ms));
        o.retry_policy = std::make_shared<zkr::exponential_backoff_retry>(std::chrono::milliseconds(50), 10,
                                                                          std::chrono::milliseconds(500));
        if (const char* level = std::getenv("ZKR_TEST_LOG")) {
            o.logger = spdlog::stderr_color_mt("zkr-worker");
            o.logger->set_level(spdlog::level::from_str(level));
        }
        zkr::client c(o);
        c.start();
        if (!c.block_until_connected(std::chrono::seconds(20))) return 3;
        const std::string recipe = argv[2];
        const int iterations = std::atoi(argv[4]);
        const int hold_ms = std::atoi(argv[5]);
        const int log = ::open(argv[6], O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (log < 0) return 4;
        if (recipe == "mutex") {
            zkr::interprocess_mutex m(c, argv[3]);
            return run(m, iterations, hold_ms, log, argv[7]);
        }
        if (recipe == "kazoo_mutex") {
            zkr::interprocess_mutex m(c, argv[3], zkr::mutex_options{.kazoo_lock_nodes = true});
            return run(m, iterations, hold_ms, log, argv[7]);
        }
        if (recipe == "fair") {
            zkr::fair_lock f(c, argv[3]);
            return run(f, iterations, hold_ms, log, argv[7]);
        }
        if (recipe == "fenced") {
            zkr::interprocess_mutex m(c, argv[3]);
            m.acquire();
            const auto token = m.fencing_token();
            append_line(log, log_line("ACQ", token, 1));
            std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
            // Give the client a moment to learn what happened while we were stopped.
            for (int i = 0; i < 50 && m.state() != zkr::hold_state::held && m.state() != zkr::hold_state::lost; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            append_line(log, "STATE " + std::to_string(::getpid()) + " " + std::string(zkr::to_string(m.state())) + "\n");
            // A careless holder writes anyway: the store must refuse it if a newer holder wrote.
            const bool accepted = zkr::test::fenced_write(argv[7], token);
            append_line(log, std::string("WRITE ") + std::to_string(::getpid()) + " " + (accepted ? "accepted" : "refused") + "\n");
            boost::system::error_code ec;
            m.release(ec);
            return 0;
        }
        if (recipe == "view_job") {
            // The README's pattern: the holder takes a view of its hold and hands it to a job
            // thread, which checks it before every write.
            zkr::interprocess_mutex m(c, argv[3]);
            std::scoped_lock guard(m);
            const auto view = m.view();
            std::jthread job([&, view] {
                const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(hold_ms);
                while (std::chrono::steady_clock::now() < until) {
                    const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::steady_clock::now().time_since_epoch()).count();
                    append_line(log, std::string(view.is_valid() ? "WRITE " : "SKIP ") + std::to_string(::getpid()) + " " +
                                         std::to_string(now) + "\n");
                    std::this_thread::sleep_for(std::chrono::milliseconds(20));
                }
            });
            return 0;
        }
        if (recipe == "unowned_unlock") {
            // Misuse: another thread unlocks what this thread holds (a std::unique_lock moved away).
            zkr::interprocess_mutex m(c, argv[3]);
            m.lock();
            std::thread([&] { m.unlock(); }).join();
            append_line(log, "AFTER " + std::to_string(::getpid()) + " " + std::string(zkr::to_string(m.state())) + "\n");
            m.unlock();
            return 0;
        }
        if (recipe == "multi" || recipe == "multi_reversed") {
            std::vector<std::string> paths;
            std::string list = argv[3];
            for (std::size_t at = 0; at != std::string::npos;) {
                const auto comma = list.find(',', at);
                paths.push_back(list.substr(at, comma == std::string::npos ? comma : comma - at));
                at = comma == std::string::npos ? comma : comma + 1;
            }
            if (recipe == "multi_reversed") std::reverse(paths.begin(), paths.end());
            zkr::interprocess_multi_lock m(c, paths);
            return run(m, iterations, hold_ms, log, argv[7]);
        }
        if (recipe == "semaphore_mutex") {
            zkr::interprocess_semaphore_mutex m(c, argv[3]);
            return run(m, iterations, hold_ms, log, argv[7]);
        }
        if (recipe == "latch") {
            zkr::leader_latch latch(c, argv[3], "worker-" + std::to_string(::getpid()));
            latch.start();
            latch.await_leadership();
            const auto epoch = latch.fencing_token();
            append_line(log, log_line("ACQ", epoch, 1));
            increment(argv[7]);
            std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
            append_line(log, log_line("REL", epoch, 1));
            latch.close();
            return 0;
        }
        if (recipe == "selector") {
            std::promise<void> done;
            zkr::leader_selector* self = nullptr;
            zkr::leader_selector selector(c, argv[3], [&](std::stop_token) {
                const auto epoch = self->fencing_token();
                append_line(log, log_line("ACQ", epoch, 1));
                increment(argv[7]);
                std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
                append_line(log, log_line("REL", epoch, 1));
                done.set_value();
            }, "worker-" + std::to_string(::getpid()));
            self = &selector;
            selector.start();
            done.get_future().wait();
            return 0;
        }
        if (int pct = 0; std::sscanf(recipe.c_str(), "rw:%d", &pct) == 1 || recipe == "rw_downgrade") {
            zkr::interprocess_read_write_lock rw(c, argv[3]);
            return run_read_write(rw, pct, recipe == "rw_downgrade", iterations, hold_ms, log, argv[7]);
        }
        int max = 0, qty = 0;
        if (std::sscanf(recipe.c_str(), "semaphore:%d:%d", &max, &qty) == 2) {
            zkr::interprocess_semaphore_v2 sem(c, argv[3], max);
            return run_semaphore(sem, qty, iterations, hold_ms, log);
        }
        if (const std::string shared = "shared_semaphore:"; recipe.rfind(shared, 0) == 0) {
            zkr::shared_count count(c, recipe.substr(shared.size()), 1);
            zkr::interprocess_semaphore_v2 sem(c, argv[3], count);
            return run_semaphore(sem, 1, iterations, hold_ms, log);
        }
        if (std::sscanf(recipe.c_str(), "curator_semaphore:%d:%d", &max, &qty) == 2) {
            zkr::interprocess_semaphore_v2 sem(c, argv[3], max, {zkr::semaphore_layout::curator});
            return run_semaphore(sem, qty, iterations, hold_ms, log);
        }
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "worker " << ::getpid() << ": " << e.what() << '\n';
        return 1;
    }
}
