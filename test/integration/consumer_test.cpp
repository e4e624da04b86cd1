// A user's project builds against the installed package (find_package, shared and static, and
// pkg-config) and its program runs against a real server; its tests, written with Catch2 and
// zkr::testing, pass.
#include "build_paths.hpp"
#include "recipe_checks.hpp"

#include "zkr_catch.hpp"

TEST_CASE("a consumer project builds against the installed package and runs") {
    const std::string out = zkr::test::temp_file("consumer");
    zkr::test::child_process build({"/bin/bash", ZKR_CONSUMER_SCRIPT, ZKR_BUILD_DIR, out});
    REQUIRE(build.wait() == 0);
    auto& zk = zkr::test::shared_server();
    for (const auto* binary : {"/cmake/consumer", "/cmake/consumer_static", "/consumer_pkgconfig"}) {
        INFO(binary);
        zkr::test::child_process run({out + binary, zk.connect_string()});
        CHECK(run.wait() == 0);
    }
    // The project's own tests: Catch2 with zkr::testing's servers (a standalone and an ensemble).
    zkr::test::child_process tests({out + "/cmake/testing_example"});
    CHECK(tests.wait() == 0);
    zkr::test::child_process({"/bin/rm", "-rf", out}).wait();
}
