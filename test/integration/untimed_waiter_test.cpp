// An untimed acquire (lock(), acquire(), a guard, `zkr lock` without -w) waits on through the loss
// of its session: paused past it, or with the server down past it. It queues again with a new
// node on the new session and gets the lock once the holder lets go. Each waiter is a process of
// its own (zkr_lock_worker, or the zkr command line), with a 4 s (worker) or 2 s (zkr) session.
#include "build_paths.hpp"
#include "recipe_checks.hpp"

#include <zkr/fair_lock.hpp>
#include <zkr/interprocess_mutex.hpp>
#include <zkr/interprocess_semaphore_mutex.hpp>
#include <zkr/interprocess_semaphore_v2.hpp>

#include "zkr_catch.hpp"

#include <signal.h>

#include <thread>

using namespace std::chrono_literals;

namespace {

// One waiter per recipe, behind a holder in this process (whose session outlives the fault).
struct waiter {
    std::string recipe;  // as zkr_lock_worker names it, or "cli"
    std::string path;
    std::string log = zkr::test::temp_file("untimed");
    std::optional<zkr::test::child_process> process;
};

const std::vector<std::string> recipes = {"mutex", "fair", "semaphore_mutex", "semaphore:1:1", "cli"};

struct holder_set {
    std::unique_ptr<zkr::client> client;
    std::vector<std::unique_ptr<zkr::interprocess_mutex>> mutexes;
    std::vector<std::unique_ptr<zkr::interprocess_semaphore_mutex>> semaphore_mutexes;
    std::vector<std::unique_ptr<zkr::interprocess_semaphore_v2>> semaphores;
    std::vector<zkr::lease> leases;

    // Holds the lock at `path` the way the waiter's recipe shares it.
    void hold(const std::string& recipe, const std::string& path) {
        if (recipe == "semaphore_mutex") {
            semaphore_mutexes.push_back(std::make_unique<zkr::interprocess_semaphore_mutex>(*client, path));
            semaphore_mutexes.back()->lock();
        } else if (recipe == "semaphore:1:1") {
            semaphores.push_back(std::make_unique<zkr::interprocess_semaphore_v2>(*client, path, 1));
            leases.push_back(semaphores.back()->acquire());
        } else {  // mutex, fair lock and zkr lock share the mutex's nodes
            mutexes.push_back(std::make_unique<zkr::interprocess_mutex>(*client, path));
            mutexes.back()->lock();
        }
    }
    void release_all() {
        for (auto& m : mutexes) m->unlock();
        for (auto& m : semaphore_mutexes) m->unlock();
        leases.clear();
    }
};

std::vector<waiter> start_waiters(zkr::test::zk_cluster& zk, holder_set& holders, const std::string& name) {
    std::vector<waiter> waiters;
    for (const auto& r : recipes) {
        waiter w{r, zkr::test::recipe_path(name + "-" + r.substr(0, r.find(':')))};
        holders.hold(r, w.path);
        if (r == "cli")
            w.process.emplace(std::vector<std::string>{"/bin/sh", "-c", "exec \"$0\" \"$@\" >>'" + w.log + "' 2>&1", ZKR_CLI,
                                                       "lock", "--connect", zk.connect_string(), "--session-timeout", "2", w.path,
                                                       "--", "/bin/sh", "-c", "echo ACQ"});
        else
            w.process.emplace(std::vector<std::string>{ZKR_LOCK_WORKER, zk.connect_string(), r, w.path, "1", "0", w.log,
                                                       zkr::test::temp_file("counter")});
        waiters.push_back(std::move(w));
    }
    // Every waiter has queued behind its holder.
    for (auto& w : waiters) {
        INFO(w.recipe);
        REQUIRE(zkr::test::eventually([&] { return zkr::test::nodes_under(*holders.client, w.path) == 2; }, 20s));
    }
    // A waiter that has waited a while has nothing in flight: its watches (on the node ahead, and
    // after 100 ms on its own) are all it has out. The session's loss ends both; what kept such a
    // waiter going then is the point of these tests.
    std::this_thread::sleep_for(1s);
    return waiters;
}

bool acquired(const waiter& w) {
    for (const auto& l : zkr::test::read_lines(w.log))
        if (l.rfind("ACQ", 0) == 0) return true;
    return false;
}

// After the fault: nobody acquired while the holder held; once it lets go, each waiter acquires
// and exits 0, and nothing is left behind.
void waiters_acquire_after_release(std::vector<waiter>& waiters, holder_set& holders) {
    std::this_thread::sleep_for(1s);
    for (auto& w : waiters) {
        INFO(w.recipe << ": " << [&] { std::string s; for (auto& l : zkr::test::read_lines(w.log)) s += l + " | "; return s; }());
        CHECK(w.process->wait_for(0ms) == -1);  // still waiting: before the fix, it died with "client closed"
        CHECK_FALSE(acquired(w));
    }
    holders.release_all();
    for (auto& w : waiters) {
        INFO(w.recipe << ": " << [&] { std::string s; for (auto& l : zkr::test::read_lines(w.log)) s += l + " | "; return s; }());
        CHECK(w.process->wait_for(30s) == 0);
        CHECK(acquired(w));
        CHECK(zkr::test::eventually([&] { return zkr::test::nodes_under(*holders.client, w.path) == 0; }, 15s));
        std::remove(w.log.c_str());
    }
}

}  // namespace

TEST_CASE("untimed waiter: paused past its session, it queues again and gets the lock (every recipe, zkr lock)") {
    auto& zk = zkr::test::shared_server();
    holder_set holders{zkr::test::connect(zk.connect_string(), 20s)};
    auto waiters = start_waiters(zk, holders, "untimed-paused");
    for (auto& w : waiters) w.process->kill(SIGSTOP);
    std::this_thread::sleep_for(6500ms);  // past the 4 s session (the server's tick may add 2 s)
    for (auto& w : waiters) w.process->kill(SIGCONT);
    waiters_acquire_after_release(waiters, holders);
}

TEST_CASE("untimed waiter: the server down past its session, it queues again and gets the lock (every recipe, zkr lock)") {
    zkr::test::zk_cluster zk;
    holder_set holders{zkr::test::connect(zk.connect_string(), 30s)};
    auto waiters = start_waiters(zk, holders, "untimed-outage");
    zk.kill(0);
    std::this_thread::sleep_for(6s);  // the waiters' clients declare their sessions lost meanwhile
    zk.start(0);
    // The holder's 30 s session survives the restart; the waiters' old sessions expire on the
    // server some seconds later, and with them their old nodes.
    REQUIRE(holders.client->block_until_connected(20s));
    waiters_acquire_after_release(waiters, holders);
}
