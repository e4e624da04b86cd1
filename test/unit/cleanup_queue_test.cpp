#include "cleanup_queue.hpp"

#include <zkr/error.hpp>

#include "zkr_catch.hpp"

using zkr::errc;
using zkr::detail::cleanup_queue;
using delete_outcome = cleanup_queue::delete_outcome;

TEST_CASE("cleanup queue: a delete stays until an answer settles it") {
    cleanup_queue q;
    q.keep_delete("/a/n1", 3);
    q.keep_delete("/a/n2", -1);
    REQUIRE(q.deletes().size() == 2);
    CHECK(q.deletes()[0].path == "/a/n1");
    CHECK(q.deletes()[0].version == 3);

    // Lost with the connection, refused by a read-only server: sent again on the next connection.
    CHECK(q.delete_answered("/a/n1", make_error_code(errc::connection_loss)) == delete_outcome::retry_later);
    CHECK(q.delete_answered("/a/n1", make_error_code(errc::session_expired)) == delete_outcome::retry_later);
    CHECK(q.delete_answered("/a/n1", make_error_code(errc::not_read_only)) == delete_outcome::retry_later);
    CHECK(q.deletes().size() == 2);

    // Done, or already gone: settled.
    CHECK(q.delete_answered("/a/n1", {}) == delete_outcome::done);
    CHECK(q.delete_answered("/a/n2", make_error_code(errc::no_node)) == delete_outcome::done);
    CHECK(q.deletes().empty());
}

TEST_CASE("cleanup queue: a delete the server refuses for good is given up") {
    cleanup_queue q;
    q.keep_delete("/a/n1", 3);
    CHECK(q.delete_answered("/a/n1", make_error_code(errc::bad_version)) == delete_outcome::gave_up);
    CHECK(q.deletes().empty());
    q.keep_delete("/a/n1", -1);
    CHECK(q.delete_answered("/a/n1", make_error_code(errc::no_auth)) == delete_outcome::gave_up);
    CHECK(q.deletes().empty());
}

TEST_CASE("cleanup queue: an orphan's nodes, found by its prefix, become deletes") {
    cleanup_queue q;
    q.add_orphan({"/locks/x", "_c_1-", 7, true});
    q.add_orphan({"/locks/x", "_c_2-", 7, false});
    REQUIRE(q.orphans_to_look_for(7).size() == 2);

    // Lost with the connection: looked for again on the next one.
    CHECK(q.orphan_listed("/locks/x", "_c_1-", make_error_code(errc::connection_loss), {}).empty());
    CHECK(q.orphans_to_look_for(7).size() == 2);

    // Only the names with its own prefix are its nodes (not another orphan's, nor a stranger's).
    const auto found = q.orphan_listed("/locks/x", "_c_1-", {}, {"_c_2-lock-0000000001", "_c_1-lock-0000000002", "lock-0000000003"});
    CHECK(found == std::vector<std::string>{"/locks/x/_c_1-lock-0000000002"});
    REQUIRE(q.deletes().size() == 1);
    CHECK(q.deletes()[0].path == "/locks/x/_c_1-lock-0000000002");
    CHECK(q.deletes()[0].version == -1);
    REQUIRE(q.orphans_to_look_for(7).size() == 1);
    CHECK(q.orphans_to_look_for(7)[0].prefix == "_c_2-");
}

TEST_CASE("cleanup queue: an orphan whose parent is gone is settled with nothing to delete") {
    cleanup_queue q;
    q.add_orphan({"/locks/x", "_c_1-", 7, false});
    CHECK(q.orphan_listed("/locks/x", "_c_1-", make_error_code(errc::no_node), {}).empty());
    CHECK(q.orphans_to_look_for(7).empty());
    CHECK(q.deletes().empty());
}

TEST_CASE("cleanup queue: an ephemeral orphan of an ended session is not looked for") {
    cleanup_queue q;
    q.add_orphan({"/locks/x", "_c_1-", 7, true});   // went with session 7
    q.add_orphan({"/nodes", "_c_2-", 7, false});    // persistent: outlives it
    q.add_orphan({"/locks/x", "_c_3-", 8, true});   // of the session now
    const auto& left = q.orphans_to_look_for(8);
    REQUIRE(left.size() == 2);
    CHECK(left[0].prefix == "_c_2-");
    CHECK(left[1].prefix == "_c_3-");
}

TEST_CASE("cleanup queue: closing drops everything and counts the deletes not done") {
    cleanup_queue q;
    q.keep_delete("/a", -1);
    q.keep_delete("/b", -1);
    q.add_orphan({"/locks/x", "_c_1-", 7, false});
    CHECK(q.drop_all() == 2);
    CHECK(q.deletes().empty());
    CHECK(q.orphans_to_look_for(7).empty());
    CHECK(q.drop_all() == 0);
}
