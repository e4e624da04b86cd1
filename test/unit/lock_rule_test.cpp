#include "../../recipes/queue/grant_mark.hpp"
#include "../../recipes/queue/lock_rule.hpp"

#include <zkr/error.hpp>

#include "zkr_catch.hpp"

using zkr::detail::queue_view;

namespace {
std::string node(const char* guid, int seq) {
    char buf[80];
    std::snprintf(buf, sizeof buf, "_c_%s-lock-%010d", guid, seq);
    return buf;
}
}  // namespace

TEST_CASE("lock nodes sort by sequence, whatever their guid, foreign nodes are ignored") {
    const std::vector<std::string> children = {node("zzz", 7), "foreign", node("aaa", 12), node("mmm", 3),
                                               "lock-notdigits", "x-lock-0000000001", "lock-0000000002",
                                               "_c_abc-lock-00000x0001"};
    const auto sorted = zkr::queue_of(children, {"lock-"}).sorted;
    CHECK(sorted == std::vector<std::string>{node("mmm", 3), node("zzz", 7), node("aaa", 12)});
    CHECK(zkr::lock_sequence(node("a", 42), "lock-") == 42u);
    CHECK_FALSE(zkr::lock_sequence("lease-0000000001", "lock-"));
    CHECK_FALSE(zkr::lock_sequence("lock-00000x0001", "lock-"));
}

using names = std::vector<std::string>;

TEST_CASE("lowest_n_rule: the n lowest hold, the first waiter watches the holders, later ones their predecessor") {
    const names q = {"a", "b", "c", "d", "e"};
    zkr::lowest_n_rule one(1), three(3);
    CHECK(one.decide(q, 0).holds);
    CHECK(one.decide(q, 1).watch == names{"a"});
    CHECK_FALSE(one.decide(q, 1).await_grant);
    CHECK(one.decide(q, 4).watch == names{"d"});
    CHECK(one.decide(q, 4).await_grant);
    CHECK(three.decide(q, 2).holds);
    // Any of the three holders may release first: the first waiter watches them all.
    CHECK(three.decide(q, 3).watch == names{"a", "b", "c"});
    CHECK_FALSE(three.decide(q, 3).await_grant);
    CHECK(three.decide(q, 4).watch == names{"d"});
    CHECK(three.decide(q, 4).await_grant);
}

TEST_CASE("prefix_decision: weights sum in order, a heavy node blocks those behind it (FIFO)") {
    using zkr::detail::prefix_decision;
    const names q = {"a", "b", "c", "d"};
    // max 4: a(2) b(1) hold; c(3) would make 6: first waiter, watches a and b; d(1) waits behind c.
    const std::vector<std::uint64_t> w = {2, 1, 3, 1};
    CHECK(prefix_decision(q, 0, w, 4).holds);
    CHECK(prefix_decision(q, 1, w, 4).holds);
    CHECK(prefix_decision(q, 2, w, 4).watch == names{"a", "b"});
    const auto d = prefix_decision(q, 3, w, 4);
    CHECK_FALSE(d.holds);  // 2+1+1 would fit, but c came first
    CHECK(d.watch == names{"c"});
    CHECK(d.await_grant);
    // A node heavier than the maximum at the head waits for the maximum to grow; nothing to watch.
    const auto heavy = prefix_decision({"x"}, 0, std::vector<std::uint64_t>{5}, 4);
    CHECK_FALSE(heavy.holds);
    CHECK(heavy.watch.empty());
    CHECK(prefix_decision({"x"}, 0, std::vector<std::uint64_t>{5}, 5).holds);
}

TEST_CASE("lease node names carry the weight and the max tag, others read as weight 1, no tag") {
    const auto name = "_c_0f1e-ab-m3-w2-lease-0000000042";
    CHECK(zkr::lease_node_name("m3", 2) == "m3-w2-lease-");
    const auto info = zkr::parse_lease_node(name);
    REQUIRE(info);
    CHECK(info->weight == 2);
    CHECK(info->max_tag == "m3");
    const auto unprotected = zkr::parse_lease_node("mc-w7-lease-0000000001");
    REQUIRE(unprotected);
    CHECK(unprotected->weight == 7);
    CHECK(unprotected->max_tag == "mc");
    const auto curator = zkr::parse_lease_node("_c_0f1e-lease-0000000001");
    REQUIRE(curator);
    CHECK(curator->weight == 1);
    CHECK(curator->max_tag.empty());
    CHECK(zkr::parse_lease_node("m3-w0-lease-0000000001")->max_tag.empty());  // weight 0 is not ours
    CHECK(zkr::parse_lease_node("m3-wx-lease-0000000001")->max_tag.empty());
    CHECK_FALSE(zkr::parse_lease_node("m3-w1-lock-0000000001"));
    // The tags: one place knows their format.
    CHECK(zkr::fixed_max_tag(3) == "m3");
    CHECK(zkr::max_of_tag("m3") == 3u);
    const auto shared = zkr::shared_count_max_tag("/gateway/max");
    CHECK(shared.rfind("mc", 0) == 0);
    CHECK(zkr::is_shared_count_tag(shared));
    CHECK(shared != zkr::shared_count_max_tag("/other/max"));
    CHECK_FALSE(zkr::max_of_tag(shared));
    CHECK_FALSE(zkr::max_of_tag(""));
    CHECK_FALSE(zkr::max_of_tag("m"));
    CHECK_FALSE(zkr::max_of_tag("mx"));
    CHECK_FALSE(zkr::is_shared_count_tag("m3"));
    // holder_count: the longest prefix that fits.
    CHECK(zkr::detail::holder_count(std::vector<std::uint64_t>{2, 1, 3, 1}, 4, 4) == 2);
    CHECK(zkr::detail::holder_count(std::vector<std::uint64_t>{2, 1, 3, 1}, 1, 4) == 1);
    CHECK(zkr::detail::holder_count(std::vector<std::uint64_t>{5}, 1, 4) == 0);
}

TEST_CASE("lease_rule: weighted holds, and a participant with another maximum is refused") {
    std::int64_t max = 3;
    zkr::lease_rule rule([&] { return max; }, "m3");
    const names q = {"m3-w2-lease-0000000001", "m3-w1-lease-0000000002", "m3-w1-lease-0000000003"};
    CHECK(rule.decide(q, 1).holds);
    CHECK_FALSE(rule.decide(q, 2).holds);
    max = 4;  // a grown maximum is read at each decision
    CHECK(rule.decide(q, 2).holds);
    max = -1;  // a negative count means no leases
    CHECK_FALSE(rule.decide(q, 0).holds);
    max = 3;
    const names mixed = {"m5-w1-lease-0000000001", "m3-w1-lease-0000000002"};
    CHECK(rule.decide(mixed, 1).error == zkr::errc::max_mismatch);
    // Nodes behind ours do not matter to our decision (they will refuse themselves).
    const names behind = {"m3-w1-lease-0000000001", "m5-w1-lease-0000000002"};
    CHECK_FALSE(rule.decide(behind, 0).error);
}

TEST_CASE("queue_view: a woken waiter decides without listing again") {
    zkr::lowest_n_rule one(1);
    queue_view v;
    REQUIRE(v.reset({"a", "b", "c", "d"}, "c"));
    CHECK(v.ahead() == 2);
    auto d = v.decide(one);
    CHECK_FALSE(d.holds);
    CHECK(d.watch == names{"b"});
    v.remove("b");  // our predecessor went: now watch a
    d = v.decide(one);
    CHECK(d.watch == names{"a"});
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

TEST_CASE("only a rule under which several hold awaits grants: a one-holder lock's waiter waits for the node ahead to go") {
    CHECK_FALSE(zkr::lowest_n_rule(1).grants_awaited());
    CHECK(zkr::lowest_n_rule(2).grants_awaited());
    CHECK_FALSE(zkr::lease_rule([] { return 1; }, zkr::fixed_max_tag(1)).grants_awaited());
    CHECK(zkr::lease_rule([] { return 3; }, zkr::fixed_max_tag(3)).grants_awaited());
    // A shared count's maximum can grow: its grants are marked.
    CHECK(zkr::lease_rule([] { return 1; }, zkr::shared_count_max_tag("/count")).grants_awaited());
}

TEST_CASE("a rule's queue names the first node of another kind: a lease among lock nodes, a lock node among leases, zkr's or Curator's") {
    const std::vector<std::string> locks = {"_c_a-lock-0000000001", "_c_b-lock-0000000002", "lock-0000000003", "junk"};
    const zkr::lowest_n_rule mutex(1);
    const zkr::lease_rule semaphore([] { return 1; }, zkr::fixed_max_tag(1));
    CHECK_FALSE(mutex.queue(locks).other_kind);
    CHECK(semaphore.queue(locks).other_kind == "_c_a-lock-0000000001");
    CHECK(semaphore.queue(locks).sorted.empty());
    auto mixed = locks;
    mixed.push_back("_c_c-m1-w1-lease-0000000004");
    CHECK(mutex.queue(mixed).other_kind == "_c_c-m1-w1-lease-0000000004");
    CHECK(mutex.queue(mixed).sorted == std::vector<std::string>{"_c_a-lock-0000000001", "_c_b-lock-0000000002"});
    CHECK_FALSE(mutex.queue({"lease-0000000001"}).other_kind);  // unprotected: not a participant
    // Curator's read-write lock nodes are a third kind: neither a mutex nor a semaphore takes part with them.
    CHECK(mutex.queue({"_c_d-__WRIT__0000000005"}).other_kind == "_c_d-__WRIT__0000000005");
    CHECK(semaphore.queue({"_c_d-__READ__0000000005"}).other_kind == "_c_d-__READ__0000000005");
    CHECK(zkr::kind_of_node("_c_d-__READ__0000000005")->name == "read-write lock");
    CHECK(zkr::kind_of_node("_c_d-m1-w1-lease-0000000005")->name == "semaphore");
    CHECK_FALSE(zkr::kind_of_node("_c_d-config-0000000005"));
    // Two names in one queue, ordered by sequence alone (Curator's fixForSorting).
    const auto rw = zkr::queue_of({"_c_b-__WRIT__0000000002", "_c_a-__READ__0000000003", "_c_z-__READ__0000000001"},
                                  {zkr::read_lock_name, zkr::write_lock_name});
    CHECK(rw.sorted == std::vector<std::string>{"_c_z-__READ__0000000001", "_c_b-__WRIT__0000000002", "_c_a-__READ__0000000003"});
    CHECK_FALSE(rw.other_kind);
}

TEST_CASE("a rule counts its holders from the names: the n lowest, or the leases that fit the maximum now") {
    const std::vector<std::string> q = {node("a", 1), node("b", 2), node("c", 3)};
    CHECK(zkr::lowest_n_rule(1).holders(q) == 1);
    CHECK(zkr::lowest_n_rule(5).holders(q) == 3);
    CHECK(zkr::lowest_n_rule(1).holders({}) == 0);
    std::int64_t max = 3;
    const zkr::lease_rule rule([&] { return max; }, "m3");
    const std::vector<std::string> leases = {"_c_a-m3-w2-lease-0000000001", "_c_b-m3-w2-lease-0000000002", "_c_c-m3-w1-lease-0000000003"};
    CHECK(rule.holders(leases) == 1);  // 2 + 2 > 3: the second waits, and the third behind it
    max = 4;
    CHECK(rule.holders(leases) == 2);
    max = -1;
    CHECK(rule.holders(leases) == 0);
    CHECK(rule.node_name() == "m3-w1-lease-");
    CHECK(zkr::lowest_n_rule(1).node_name() == "lock-");
}

TEST_CASE("curator_lease_rule: a lease holds with fewer than max nodes ahead, a waiter watches every node ahead and never a grant") {
    std::int64_t max = 2;
    const zkr::curator_lease_rule rule([&] { return max; });
    const names q = {"a", "b", "c", "d"};
    CHECK(rule.decide(q, 0).holds);
    CHECK(rule.decide(q, 1).holds);
    // Any release ahead may be its turn (Curator's waiter watches the whole folder).
    CHECK(rule.decide(q, 2).watch == names{"a", "b"});
    CHECK(rule.decide(q, 3).watch == names{"a", "b", "c"});
    CHECK_FALSE(rule.decide(q, 3).await_grant);
    CHECK_FALSE(rule.grants_awaited());
    CHECK(rule.holders(q) == 2);
    max = 3;  // a shared count that grew
    CHECK(rule.decide(q, 2).holds);
    CHECK(rule.holders(q) == 3);
    max = -1;
    CHECK(rule.holders(q) == 0);
    CHECK(rule.decide(q, 0).watch.empty());
    // Curator's lease nodes: "_c_<uuid>-lease-<seq>", sorted by sequence; anything else ignored,
    // a node of another kind named.
    const auto queue = rule.queue({"_c_b-lease-0000000002", "_c_a-lease-0000000001", "lease-0000000003", "other"});
    CHECK(queue.sorted == names{"_c_a-lease-0000000001", "_c_b-lease-0000000002"});
    CHECK_FALSE(queue.other_kind);
    CHECK(rule.queue({"_c_a-lock-0000000001"}).other_kind == "_c_a-lock-0000000001");
}

TEST_CASE("the kinds' table: each kind found by its node names, its rule counting holders, a latch a kind of its own") {
    using zkr::queue_kind;
    // Every kind has its row, and only one row claims a node.
    for (const auto id : {queue_kind::mutex, queue_kind::semaphore, queue_kind::read_write, queue_kind::latch, queue_kind::curator_semaphore})
        CHECK(zkr::kind_info(id).id == id);
    CHECK(zkr::queue_kinds().size() == 5);
    CHECK(zkr::kind_of_node("_c_a-lock-0000000001")->id == queue_kind::mutex);
    CHECK(zkr::kind_of_node("_c_a-__WRIT__0000000001")->id == queue_kind::read_write);
    CHECK(zkr::kind_of_node("_c_a-latch-0000000001")->id == queue_kind::latch);
    CHECK(zkr::kind_of_node("leases")->id == queue_kind::curator_semaphore);
    CHECK_FALSE(zkr::kind_of_node("locks"));
    CHECK_FALSE(zkr::kind_of_node("_c_a-lock-000000001"));  // nine digits: no sequence
    // A leader latch is a kind of its own (not a name compared in the rule): it refuses a mutex's nodes.
    const zkr::lowest_n_rule latch(1, queue_kind::latch);
    CHECK(latch.kind() == "leader latch");
    CHECK(latch.node_name() == "latch-");
    CHECK(latch.queue({"_c_a-lock-0000000001"}).other_kind == "_c_a-lock-0000000001");
    CHECK(zkr::lowest_n_rule(1).kind() == "mutex");
    // The rows' observers count holders from names alone, as `zkr status` and `zkr revoke` do.
    const names rw = {"_c_a-__READ__0000000001", "_c_b-__READ__0000000002", "_c_c-__WRIT__0000000003", "_c_d-__READ__0000000004"};
    const auto& rw_kind = zkr::kind_info(queue_kind::read_write);
    CHECK(zkr::queue_of_kind(rw_kind, {rw[3], rw[2], "other", rw[1], rw[0]}) == rw);
    CHECK(rw_kind.observer(rw)->holders(rw) == 2);
    CHECK(rw_kind.revocable);
    const names leases = {"_c_a-m2-w1-lease-0000000001", "_c_b-m2-w1-lease-0000000002", "_c_c-m2-w1-lease-0000000003"};
    CHECK(zkr::kind_info(queue_kind::semaphore).observer(leases)->holders(leases) == 2);
    // A shared count's maximum is not in the names: no rule can count the holders.
    CHECK_FALSE(zkr::kind_info(queue_kind::semaphore).observer({"_c_a-" + zkr::shared_count_max_tag("/c") + "-w1-lease-0000000001"}));
    CHECK_FALSE(zkr::kind_info(queue_kind::semaphore).revocable);
    CHECK(zkr::kind_info(queue_kind::latch).elects);
    CHECK(zkr::kind_info(queue_kind::mutex).elects);  // (a leader selector's nodes)
    CHECK(zkr::queue_of_kind(zkr::kind_info(queue_kind::curator_semaphore), {"leases"}).empty());
}

TEST_CASE("a Curator-layout semaphore's lease folder on a lock path is a node of another kind, for every rule") {
    const std::vector<std::string> children = {"_c_a-m2-w1-lease-0000000001", "locks", "leases"};
    const zkr::lease_rule semaphore([] { return 2; }, zkr::fixed_max_tag(2));
    CHECK(semaphore.queue(children).other_kind == "leases");
    CHECK(zkr::lowest_n_rule(1).queue({"leases"}).other_kind == "leases");
    CHECK_FALSE(zkr::lowest_n_rule(1).queue({"locks", "leases-old"}).other_kind);
}

TEST_CASE("a mutex rule that takes Kazoo's Lock nodes: they sort with zkr's by sequence, other foreign nodes stay out") {
    const std::vector<std::string> children = {"_c_a-lock-0000000003", "0f1e2d3c4b5a69788796a5b4c3d2e1f0__lock__0000000001",
                                               "abc__lock__0000000002", "abc__rlock__0000000004", "lock-0000000005", "other"};
    const zkr::lowest_n_rule kazoo(1, zkr::queue_kind::mutex, zkr::lowest_n_rule::foreign::kazoo);
    CHECK(kazoo.queue(children).sorted ==
          names{"0f1e2d3c4b5a69788796a5b4c3d2e1f0__lock__0000000001", "abc__lock__0000000002", "_c_a-lock-0000000003"});
    CHECK_FALSE(kazoo.queue(children).other_kind);
    // Without the option a zkr mutex ignores them, as before.
    CHECK(zkr::lowest_n_rule(1).queue(children).sorted == names{"_c_a-lock-0000000003"});
    // Our node behind Kazoo's waits for the one just ahead.
    CHECK(kazoo.decide(kazoo.queue(children).sorted, 2).watch == names{"abc__lock__0000000002"});
}

TEST_CASE("lease_rule under a shared count: a node that fits holds only behind a node that marked its grant") {
    std::int64_t max = 3;
    const auto tag = zkr::shared_count_max_tag("/count");
    const zkr::lease_rule rule([&] { return max; }, tag);
    CHECK(rule.grants_marked());
    CHECK_FALSE(zkr::lease_rule([] { return 3; }, zkr::fixed_max_tag(3)).grants_marked());
    const auto lease = [&](int seq) { return tag + "-w1-lease-" + std::to_string(1000000000 + seq); };
    const names q = {lease(1), lease(2), lease(3)};
    CHECK(rule.decide(q, 0).holds);  // nothing ahead
    // Within the count, but the node ahead has not marked its grant: await it.
    const auto d = rule.decide(q, 1);
    CHECK_FALSE(d.holds);
    CHECK(d.awaits_mark);
    CHECK(d.await_grant);
    CHECK(d.watch == names{lease(1)});
    zkr::decision_context marked;
    marked.marked_ahead = {lease(1)};
    CHECK(rule.decide(q, 1, marked).holds);
    // The count shrank after 1 and 2 held: 3 is the first waiter, and any release ahead may be its turn.
    max = 1;
    marked.marked_ahead = {lease(1), lease(2)};
    const auto first = rule.decide(q, 2, marked);
    CHECK_FALSE(first.holds);
    CHECK_FALSE(first.awaits_mark);
    CHECK_FALSE(first.await_grant);
    CHECK(first.watch == names{lease(1), lease(2)});
    // Not marked, beyond the count: a later waiter awaits the one ahead, as under a fixed maximum.
    const auto later = rule.decide(q, 2);
    CHECK(later.await_grant);
    CHECK_FALSE(later.awaits_mark);
    CHECK(later.watch == names{lease(2)});
}

TEST_CASE("grant mark: a node's data with the mark after it, which no text write gives, and the data as it was without it") {
    using namespace zkr::detail;
    const auto marked = with_grant_mark("host-1:4242");
    CHECK(has_grant_mark(marked));
    CHECK(without_grant_mark(marked) == "host-1:4242");
    CHECK(with_grant_mark(marked) == marked);  // written twice (a revocation's write-back): one mark
    CHECK(has_grant_mark(with_grant_mark("")));
    CHECK(without_grant_mark(with_grant_mark("")).empty());
    // What an operator, a revoker or a plain data write leaves is no mark.
    for (const char* written : {"", "operator", "__REVOKE__", "zkr:granted", "host-1:4242\\0zkr:granted"}) {
        CAPTURE(written);
        CHECK_FALSE(has_grant_mark(written));
        CHECK(without_grant_mark(written) == written);
    }
}
