#include <zkr/lock_rule.hpp>

#include <catch2/catch.hpp>

using zkr::detail::queue_view;

namespace {
std::string node(const char* guid, int seq) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "_c_%s-lock-%010d", guid, seq);
    return buf;
}
}  // namespace

TEST_CASE("lock nodes sort by sequence, whatever their protect prefix; foreign nodes are ignored") {
    const std::vector<std::string> children = {node("zzz", 7), "foreign", node("aaa", 12), node("mmm", 3),
                                               "lock-notdigits", "x-lock-0000000001"};
    const auto sorted = zkr::sorted_participants(children, "lock-");
    CHECK(sorted == std::vector<std::string>{"x-lock-0000000001", node("mmm", 3), node("zzz", 7), node("aaa", 12)});
    CHECK(zkr::lock_sequence(node("a", 42), "lock-") == 42u);
    CHECK_FALSE(zkr::lock_sequence("lease-0000000001", "lock-"));
    CHECK_FALSE(zkr::lock_sequence("lock-00000x0001", "lock-"));
}

TEST_CASE("lowest_n_rule: the n lowest hold, others watch n places ahead") {
    const std::vector<std::string> q = {"a", "b", "c", "d", "e"};
    zkr::lowest_n_rule one(1), three(3);
    CHECK(one.decide(q, 0).holds);
    CHECK(one.decide(q, 1).watch == "a");
    CHECK(one.decide(q, 4).watch == "d");
    CHECK(three.decide(q, 2).holds);
    CHECK(three.decide(q, 3).watch == "a");
    CHECK(three.decide(q, 4).watch == "b");
}

TEST_CASE("queue_view: a woken waiter decides without listing again") {
    zkr::lowest_n_rule one(1);
    queue_view v;
    REQUIRE(v.reset({"a", "b", "c", "d"}, "c"));
    CHECK(v.ahead() == 2);
    auto d = v.decide(one);
    CHECK_FALSE(d.holds);
    CHECK(d.watch == "b");
    v.remove("b");  // our predecessor went: now watch a
    d = v.decide(one);
    CHECK(d.watch == "a");
    v.remove("a");
    CHECK(v.decide(one).holds);
    CHECK_FALSE(v.reset({"a", "b"}, "c"));  // our node vanished
}

TEST_CASE("queue_view ignores removals of nodes it never saw, and never removes ours") {
    zkr::lowest_n_rule one(1);
    queue_view v;
    REQUIRE(v.reset({"a", "b"}, "b"));
    v.remove("zz");
    v.remove("b");
    CHECK_FALSE(v.decide(one).holds);
    v.remove("a");
    CHECK(v.decide(one).holds);
}
