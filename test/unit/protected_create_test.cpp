#include "protected_create.hpp"

#include "zkr_catch.hpp"

#include <string>

using zkr::errc;
using zkr::detail::protected_create;

namespace {
protected_create started() {
    protected_create p;
    p.start();
    return p;
}
}  // namespace

TEST_CASE("protected create: the first try creates, with a prefix of Curator's layout") {
    auto p = started();
    CHECK(p.prefix().size() == 40);
    CHECK(p.prefix().starts_with("_c_"));
    CHECK_FALSE(p.looks_up_first());
    CHECK_FALSE(p.may_have_left_node());
}

TEST_CASE("protected create: after a lost reply the next try looks for its node, same prefix") {
    for (const auto e : {errc::connection_loss, errc::operation_timeout, errc::not_read_only}) {
        auto p = started();
        const std::string before(p.prefix());
        CHECK_FALSE(p.failed(make_error_code(e), true));
        CHECK(p.looks_up_first());
        CHECK(p.may_have_left_node());  // given up now, its node is the clean-up queue's
        CHECK(p.prefix() == before);
    }
}

TEST_CASE("protected create: on a new session an ephemeral create draws a new prefix and creates") {
    auto p = started();
    const std::string before(p.prefix());
    p.failed(make_error_code(errc::connection_loss), true);
    CHECK_FALSE(p.failed(make_error_code(errc::session_expired), true));  // its old node went with the session
    CHECK_FALSE(p.looks_up_first());
    CHECK_FALSE(p.may_have_left_node());
    CHECK(p.prefix() != before);
}

TEST_CASE("protected create: on a new session a persistent create leaves its old prefix to the clean-up") {
    auto p = started();
    const std::string before(p.prefix());
    const auto left = p.failed(make_error_code(errc::session_expired), false);
    REQUIRE(left);
    CHECK(left->view() == before);
    CHECK(p.prefix() != before);
    CHECK_FALSE(p.looks_up_first());
}

TEST_CASE("protected create: the lookup knows its own nodes by the prefix") {
    auto p = started();
    const std::string mine = std::string(p.prefix()) + "lock-0000000001";
    CHECK(p.is_ours(mine));
    CHECK_FALSE(p.is_ours("lock-0000000001"));
    auto other = started();
    CHECK_FALSE(p.is_ours(std::string(other.prefix()) + "lock-0000000001"));
}

TEST_CASE("protected create: a lookup that finds none creates, but on a read-only server it keeps looking") {
    auto p = started();
    p.failed(make_error_code(errc::connection_loss), true);
    p.found_none(true);
    CHECK(p.looks_up_first());
    CHECK(p.may_have_left_node());
    p.found_none(false);
    CHECK_FALSE(p.looks_up_first());
    CHECK_FALSE(p.may_have_left_node());
}

TEST_CASE("protected create: a node found is adopted if this session owns it or it is persistent") {
    auto p = started();
    p.failed(make_error_code(errc::connection_loss), true);
    const std::string before(p.prefix());
    CHECK(p.adopts(7, 7, true));
    CHECK(p.adopts(3, 7, false));
    CHECK(p.prefix() == before);
    // An old session's node with our prefix: never ours. A new prefix, and a plain create.
    CHECK_FALSE(p.adopts(3, 7, true));
    CHECK(p.prefix() != before);
    CHECK_FALSE(p.looks_up_first());
}
