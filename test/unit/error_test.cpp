#include <zkr/error.hpp>
#include <zkr/path.hpp>

#include "zkr_catch.hpp"

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

TEST_CASE("the exception says the code's message once, whether its reason says it or not") {
    const std::string lost = boost::system::error_code(zkr::errc::connection_loss).message();
    const auto count = [](const std::string& in, const std::string& part) {
        int n = 0;
        for (auto at = in.find(part); at != std::string::npos; at = in.find(part, at + 1)) ++n;
        return n;
    };
    try {
        zkr::detail::throw_if(zkr::errc::connection_loss, "/a", lost + " while releasing the lock");
        FAIL("no throw");
    } catch (const zkr::error& e) {
        CHECK(count(e.what(), lost) == 1);
        CHECK(count(e.what(), "/a") == 1);
    }
    try {
        zkr::detail::throw_if(zkr::errc::invalid_path, "/a b", "invalid lock path \"/a b\": it has a space");
        FAIL("no throw");
    } catch (const zkr::error& e) {
        const std::string what = e.what();
        CHECK(what.find("it has a space") != std::string::npos);
        CHECK(count(what, boost::system::error_code(zkr::errc::invalid_path).message()) == 1);
        CHECK(count(what, "/a b") == 1);
    }
}

TEST_CASE("a path with a NUL or a control byte is shown escaped in every part of the message") {
    const std::string nul("/a\0b", 4), ctl = "/a\x01" "b";
    for (const auto& path : {nul, ctl}) {
        try {
            zkr::detail::throw_if(zkr::errc::no_node, path);
            FAIL("no throw");
        } catch (const zkr::error& e) {
            const std::string what = e.what();
            INFO(what);
            CHECK(what.find(zkr::printable_path(path)) != std::string::npos);  // all of it: "/a\x00b"
            CHECK(what.find('\x01') == std::string::npos);
            CHECK(what.find("[path: /a\\x") != std::string::npos);
            CHECK(e.path() == path);  // the path itself, unchanged
        }
    }
}
