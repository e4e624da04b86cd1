// An op as the connection's request (to_request): what the connection is told about retries,
// watches and missing nodes, for each op a machine may return.
#include "../../recipes/core/zk_port.hpp"

#include "zkr_catch.hpp"

using namespace zkr::detail;

TEST_CASE("zk port: a listing sent once is fail-fast, a plain one is retried, and a missing folder is an answer for both") {
    auto once = to_request(zk::get_children{.id = 7, .path = "/l", .watch = true, .once = true});
    CHECK(once.id == 7);
    CHECK(once.req.kind == op_kind::get_children);
    CHECK(once.req.path == "/l");
    CHECK(once.watch);
    CHECK(once.req.fail_fast);
    CHECK(once.req.no_node_is_an_answer);

    auto plain = to_request(zk::get_children{.id = 8, .path = "/l"});
    CHECK_FALSE(plain.watch);
    CHECK_FALSE(plain.req.fail_fast);
    CHECK(plain.req.no_node_is_an_answer);
}

TEST_CASE("zk port: a delete sent once is fail-fast, a guaranteed one is kept, one bound to a session says which") {
    auto once = to_request(zk::remove{.id = 1, .path = "/l/n", .version = 3, .once = true, .session = 42});
    CHECK(once.req.kind == op_kind::remove);
    CHECK(once.req.fail_fast);
    CHECK_FALSE(once.req.guaranteed);
    CHECK(once.req.version == 3);
    CHECK(once.req.required_session == 42);
    CHECK_FALSE(once.has_stat);

    auto kept = to_request(zk::remove{.id = 2, .path = "/l/n", .guaranteed = true});
    CHECK_FALSE(kept.req.fail_fast);
    CHECK(kept.req.guaranteed);
    CHECK(kept.req.version == -1);
}

TEST_CASE("zk port: an exists is told apart (a missing node is no error), reads and writes carry their fields") {
    auto e = to_request(zk::exists{.id = 3, .path = "/x", .watch = true});
    CHECK(e.is_exists);
    CHECK(e.watch);
    CHECK_FALSE(e.req.fail_fast);

    auto c = to_request(zk::create{.id = 4, .path = "/x/n-", .data = "d", .mode = zkr::create_mode::ephemeral_sequential, .protect = true});
    CHECK(c.req.kind == op_kind::create);
    CHECK(c.req.data == "d");
    CHECK(c.req.create.mode == zkr::create_mode::ephemeral_sequential);
    CHECK(c.req.create.protect);
    CHECK_FALSE(c.req.fail_fast);

    auto s = to_request(zk::set_data{.id = 5, .path = "/x", .data = "v", .version = 9});
    CHECK(s.req.kind == op_kind::set_data);
    CHECK(s.req.version == 9);
    CHECK(s.req.no_node_is_an_answer);
}
