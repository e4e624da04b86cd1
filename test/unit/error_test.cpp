#include <zkr/error.hpp>

#include <catch2/catch.hpp>

TEST_CASE("error codes keep ZooKeeper's values and have messages") {
    CHECK(static_cast<int>(zkr::errc::no_node) == -101);
    CHECK(static_cast<int>(zkr::errc::session_expired) == -112);
    const boost::system::error_code ec = zkr::errc::node_exists;
    CHECK(ec.category().name() == std::string("zkr"));
    CHECK(ec.message() == "node already exists");
    CHECK(boost::system::error_code(zkr::errc::lock_not_held).message().find("not held") != std::string::npos);
}

TEST_CASE("retryable errors") {
    CHECK(zkr::is_retryable(zkr::errc::connection_loss));
    CHECK(zkr::is_retryable(zkr::errc::operation_timeout));
    CHECK(zkr::is_retryable(zkr::errc::session_moved));
    CHECK(zkr::is_retryable(zkr::errc::session_expired));
    CHECK_FALSE(zkr::is_retryable(zkr::errc::no_node));
    CHECK_FALSE(zkr::is_retryable(zkr::errc::closed));
    CHECK_FALSE(zkr::is_retryable({}));
}

TEST_CASE("the exception carries code, path and reason") {
    try {
        zkr::detail::throw_if(zkr::errc::no_node, "/a/b", "");
        FAIL("no throw");
    } catch (const zkr::error& e) {
        CHECK(e.code() == zkr::errc::no_node);
        CHECK(e.path() == "/a/b");
        CHECK(std::string(e.what()).find("/a/b") != std::string::npos);
    }
    CHECK_NOTHROW(zkr::detail::throw_if({}, "/a"));
}
