// zkr and Kazoo (Debian's python3-kazoo, a Python process: test/peers/kazoo_worker.py) on one
// path: a zkr mutex with mutex_options::kazoo_lock_nodes and a Kazoo Lock with
// extra_lock_patterns=("-lock-",) exclude each other.
#include "build_paths.hpp"
#include "recipe_checks.hpp"

#include <zkr/interprocess_mutex.hpp>

#include "zkr_catch.hpp"

#include <unistd.h>

namespace {

const char* const kazoo_worker = ZKR_KAZOO_WORKER;

// Two Kazoo and two zkr processes on one path, interleaved; waits for all, returns the log's check.
zkr::test::log_check run_two_of_each(const std::string& zkr_recipe, const std::string& path) {
    if (::access("/usr/lib/python3/dist-packages/kazoo/recipe/lock.py", R_OK) != 0)
        FAIL("the Kazoo interop test needs Debian's python3-kazoo (scripts/run installs it)");
    const auto cs = zkr::test::shared_server().connect_string();
    // The lock's folder is a plain node, as it must be wherever Kazoo's Lock shares it
    // (docs/recipes.md): a Lock makes its folder once (ensure_path) and never again, and zkr makes
    // it a container, which the server reaps once it is empty (every 500 ms here); Kazoo's next
    // acquire then failed with NoNodeError (one rehearsal in many, 2026-12-07).
    zkr::test::plain_folder(*zkr::test::connect(cs), path);
    const auto log = zkr::test::temp_file("log"), counter = zkr::test::temp_file("counter");
    std::vector<zkr::test::child_process> workers;
    for (int i = 0; i < 2; ++i) {
        workers.emplace_back(std::vector<std::string>{"/usr/bin/python3", kazoo_worker, cs, path, "15", "20", log});
        workers.emplace_back(std::vector<std::string>{ZKR_LOCK_WORKER, cs, zkr_recipe, path, "15", "20", log, counter});
    }
    for (auto& w : workers) CHECK(w.wait() == 0);
    const auto r = zkr::test::check_log(log);
    std::remove(log.c_str());
    std::remove(counter.c_str());
    return r;
}

}  // namespace

TEST_CASE("interop: zkr's mutex with kazoo_lock_nodes and Kazoo's Lock with extra_lock_patterns exclude each other, separate processes") {
    const auto r = run_two_of_each("kazoo_mutex", zkr::test::recipe_path("interop-kazoo"));
    CHECK(r.acquisitions == 60);
    CHECK(r.max_concurrent == 1);
}
