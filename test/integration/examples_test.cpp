// The documentation's examples run, as a reader would run them, against a real server.
#include "build_paths.hpp"
#include "recipe_checks.hpp"

#include "zkr_catch.hpp"

#include <sstream>

TEST_CASE("every example in docs/examples runs to success") {
    auto& zk = zkr::test::shared_server();
    std::istringstream list(ZKR_EXAMPLES);
    std::string example;
    int ran = 0;
    while (std::getline(list, example, ';')) {
        INFO(example);
        zkr::test::child_process p({example, zk.connect_string()});
        CHECK(p.wait() == 0);
        ++ran;
    }
    CHECK(ran >= 9);
}
