// One distributed_atomic_long operation (recipes/atomic/atomic_long_machine.hpp), event by event,
// without a server; Curator's double apply (CURATOR-584) by name.
#include "../../recipes/atomic/atomic_long_machine.hpp"
#include "zk_actions.hpp"

#include <zkr/error.hpp>

#include "zkr_catch.hpp"

namespace {

using namespace zkr::detail;
using zkr::connection_state;
using zkr::errc;
using zkr::test::failed_reply;
using zkr::test::find_action;

constexpr std::int64_t session = 0x100;

atomic_config config(bool promote = false, unsigned promoted_tries = 1) {
    atomic_config c;
    c.path = "/n";
    c.receipt = "/n/zkr-receipt-x";
    c.optimistic_tries = 2;
    c.promote = promote;
    c.promoted_tries = promoted_tries;
    return c;
}

// A read's reply: data at a version (a receipt's data is its serial).
zk::reply data_reply(zk::ticket id, std::string data, std::int32_t version) {
    auto r = zkr::test::present_reply(id);
    r.data = std::move(data);
    r.stat->version = version;
    r.stat->czxid = 7;
    return r;
}

// The get_data ops among actions, in order.
std::vector<zk::get_data> reads(const std::vector<atomic_long_machine::action>& a) {
    std::vector<zk::get_data> out;
    for (const auto& x : a)
        if (const auto* op = std::get_if<zk::op>(&x))
            if (const auto* g = std::get_if<zk::get_data>(op)) out.push_back(*g);
    return out;
}

const std::string receipt_path = "/n/zkr-receipt-x1";  // (the first made)

// One round answered: the receipt's read first when there is one (the value's then comes with
// it, or after its reply while a write is in doubt), then the value's; the last actions.
// receipt empty: the receipt is gone.
std::vector<atomic_long_machine::action> answer(atomic_long_machine& m, std::vector<zk::get_data> r, std::string value,
                                                std::int32_t version, std::optional<std::string> receipt = "0",
                                                std::int32_t receipt_version = 0) {
    REQUIRE_FALSE(r.empty());
    if (r[0].path == receipt_path) {
        auto a = m.resume(receipt ? data_reply(r[0].id, *receipt, receipt_version) : failed_reply(r[0].id, errc::no_node));
        if (r.size() == 1) r = reads(a);  // the value, read once the receipt's reply is in
        else r.erase(r.begin());
        if (r.empty()) return a;  // (decided on the receipt alone)
    }
    REQUIRE(r.size() == 1);
    CHECK(r[0].path == "/n");
    return m.resume(value.empty() && version < 0 ? failed_reply(r[0].id, errc::no_node) : data_reply(r[0].id, std::move(value), version));
}

// An add of 5 up to its write: the value read, the receipt made (version 0), the value read
// again: the multi.
zk::multi add_written(atomic_long_machine& m, std::int64_t value = 10) {
    auto r = reads(m.resume(atomic_in::begin{{atomic_request::kind::add, 5}, session}));
    REQUIRE(r.size() == 1);  // no receipt yet: the value alone
    auto a = answer(m, r, long_to_data(value), 4);
    const auto* create = find_action<zk::create>(a);
    REQUIRE(create);
    CHECK(create->path == receipt_path);
    CHECK(create->mode == zkr::create_mode::ephemeral);
    a = answer(m, reads(m.resume(zkr::test::present_reply(create->id))), long_to_data(value), 4);
    const auto* multi = find_action<zk::multi>(a);
    REQUIRE(multi);
    return *multi;
}

// After a failed write, the pause's timer: the round that follows (the receipt alone first).
std::vector<zk::get_data> after_pause(atomic_long_machine& m, const std::vector<atomic_long_machine::action>& a) {
    const auto* t = find_action<zk::after>(a);
    REQUIRE(t);
    auto r = reads(m.resume(zk::timer_due{t->id}));
    REQUIRE(r.size() == 1);
    CHECK(r[0].path == receipt_path);  // the value only after the receipt's reply
    return r;
}

}  // namespace

TEST_CASE("atomic long: its format is 8 big-endian bytes, empty as 0, anything else refused") {
    CHECK(long_to_data(1) == std::string("\0\0\0\0\0\0\0\1", 8));
    CHECK(long_to_data(-2) == std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8));
    CHECK(long_to_data(0x0102030405060708) == "\x01\x02\x03\x04\x05\x06\x07\x08");
    for (const std::int64_t v : {INT64_MIN, std::int64_t{-1}, std::int64_t{0}, std::int64_t{258}, INT64_MAX}) CHECK(long_from_data(long_to_data(v)) == v);
    CHECK(long_from_data("") == 0);
    CHECK_FALSE(long_from_data("1234567"));
    CHECK_FALSE(long_from_data("123456789"));
}

TEST_CASE("atomic long: an add writes the value and the receipt in one multi, on the versions read") {
    atomic_long_machine m(config());
    const auto multi = add_written(m);
    REQUIRE(multi.ops.size() == 2);
    CHECK(multi.ops[0].type == zkr::multi_op::kind::set_data);
    CHECK(multi.ops[0].path == "/n");
    CHECK(multi.ops[0].data == long_to_data(15));
    CHECK(multi.ops[0].version == 4);
    CHECK(multi.ops[1].path == receipt_path);
    CHECK(multi.ops[1].version == 0);
    const auto a = m.resume(zkr::test::present_reply(multi.id));
    const auto* f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK(f->succeeded);
    CHECK(f->pre == 10);
    CHECK(f->post == 15);
    CHECK(f->optimistic_tries == 1);
    CHECK_FALSE(m.busy());
    // The next operation knows the receipt's version: it reads the value alone.
    CHECK(reads(m.resume(atomic_in::begin{{atomic_request::kind::add, 1}, session})).size() == 1);
}

TEST_CASE("atomic long: a write whose resent copy fails on the version its first copy moved is applied once (CURATOR-584)") {
    atomic_long_machine m(config());
    const auto multi = add_written(m);
    // The reply was lost and the client resent the multi: the copy fails on the versions moved
    // by the first. Curator reads again and adds a second time; the receipt says it took.
    const auto a = answer(m, after_pause(m, m.resume(failed_reply(multi.id, errc::bad_version))), long_to_data(15), 5, multi.ops[1].data, 1);
    CHECK_FALSE(find_action<zk::multi>(a));
    const auto* f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK(f->succeeded);
    CHECK(f->pre == 10);
    CHECK(f->post == 15);
}

TEST_CASE("atomic long: a conflict with another writer tries again from the new value") {
    atomic_long_machine m(config());
    const auto multi = add_written(m);
    // Our receipt did not move: ours did not take.
    auto a = answer(m, after_pause(m, m.resume(failed_reply(multi.id, errc::bad_version))), long_to_data(12), 5);
    const auto* again = find_action<zk::multi>(a);
    REQUIRE(again);
    CHECK(again->ops[0].data == long_to_data(17));
    CHECK(again->ops[0].version == 5);
    // The second conflict uses up the two tries: not succeeded, nothing written.
    a = answer(m, after_pause(m, m.resume(failed_reply(again->id, errc::bad_version))), long_to_data(20), 6);
    CHECK_FALSE(find_action<zk::multi>(a));
    const auto* f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK_FALSE(f->succeeded);
    CHECK(f->pre == 20);
    CHECK(f->optimistic_tries == 2);
}

TEST_CASE("atomic long: a write lost with an ephemeral receipt's session, the value written since, is unknown, not guessed") {
    atomic_long_machine m(config());
    const auto multi = add_written(m);
    m.resume(zk::connection_changed{connection_state::lost, 0});
    m.resume(failed_reply(multi.id, errc::session_expired));
    const auto r = reads(m.resume(zk::connection_changed{connection_state::reconnected, session + 1}));
    const auto a = answer(m, r, long_to_data(30), 7, std::nullopt);  // the receipt died with the session
    const auto* f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK(f->ec == errc::session_expired);
    CHECK_THAT(f->reason, zkr::test::contains("unknown"));
}

TEST_CASE("atomic long: a write lost with the session, the value untouched since, is known not to have taken") {
    atomic_long_machine m(config());
    const auto multi = add_written(m);
    m.resume(zk::connection_changed{connection_state::lost, 0});
    m.resume(failed_reply(multi.id, errc::session_expired));
    const auto r = reads(m.resume(zk::connection_changed{connection_state::reconnected, session + 1}));
    const auto a = answer(m, r, long_to_data(10), 4, std::nullopt);
    // A new receipt on the new session, under a new name (a late write for the old one can never
    // take on it), then the write again.
    const auto* create = find_action<zk::create>(a);
    REQUIRE(create);
    CHECK(create->path == "/n/zkr-receipt-x2");
    CHECK(create->mode == zkr::create_mode::ephemeral);
}

TEST_CASE("atomic long: a write whose reply is lost with the connection is fenced before the next try or the answer") {
    atomic_long_machine m(config());
    auto multi = add_written(m);
    // Its reply lost with the connection; the receipt has not moved, so it may still arrive and take.
    auto a = answer(m, after_pause(m, m.resume(failed_reply(multi.id, errc::connection_loss))), long_to_data(10), 4);
    // The receipt is moved on first, from the version that write expects.
    const auto* fence = find_action<zk::set_data>(a);
    REQUIRE(fence);
    CHECK(fence->path == receipt_path);
    CHECK(fence->version == 0);
    CHECK_FALSE(find_action<zk::multi>(a));
    CHECK_FALSE(find_action<atomic_out::finished>(a));
    // The fence fails: the write took after all (the receipt moved). The next read says so.
    a = answer(m, reads(m.resume(failed_reply(fence->id, errc::bad_version))), long_to_data(15), 5, multi.ops[1].data, 1);
    const auto* f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK(f->succeeded);
    CHECK(f->post == 15);
}

TEST_CASE("atomic long: a fence that takes leaves the write dead, and the add tries again") {
    atomic_long_machine m(config());
    auto multi = add_written(m);
    auto a = answer(m, after_pause(m, m.resume(failed_reply(multi.id, errc::connection_loss))), long_to_data(10), 4);
    const auto* fence = find_action<zk::set_data>(a);
    REQUIRE(fence);
    a = answer(m, reads(m.resume(zkr::test::present_reply(fence->id))), long_to_data(10), 4);
    const auto* again = find_action<zk::multi>(a);
    REQUIRE(again);
    CHECK(again->ops[1].version == 1);  // the receipt's version after the fence
}

TEST_CASE("atomic long: compare_and_set never creates the node, and tries once") {
    atomic_long_machine m(config());
    const auto a = answer(m, reads(m.resume(atomic_in::begin{{atomic_request::kind::compare_and_set, 1, 0}, session})), "", -1, "0", 0);
    CHECK_FALSE(find_action<zk::create>(a));
    const auto* f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK_FALSE(f->succeeded);
}

TEST_CASE("atomic long: a missing node is made with 0 first, and the add is a receipted write") {
    atomic_long_machine m(config());
    const auto a = answer(m, reads(m.resume(atomic_in::begin{{atomic_request::kind::add, 1}, session})), "", -1, std::nullopt);
    const auto* create = find_action<zk::create>(a);
    REQUIRE(create);
    CHECK(create->path == "/n");
    CHECK(create->data == long_to_data(0));
    CHECK(create->parents);
}

TEST_CASE("atomic long: out of tries it is promoted, and under the lock every write checks the lock's node") {
    atomic_long_machine m(config(true));
    auto multi = add_written(m);
    auto a = answer(m, after_pause(m, m.resume(failed_reply(multi.id, errc::bad_version))), long_to_data(20), 5);
    multi = *find_action<zk::multi>(a);
    a = answer(m, after_pause(m, m.resume(failed_reply(multi.id, errc::bad_version))), long_to_data(21), 6);
    CHECK(find_action<atomic_out::lock_needed>(a));
    a = answer(m, reads(m.resume(atomic_in::lock_granted{session, "/lock/_c_x-lock-0000000001"})), long_to_data(21), 6);
    multi = *find_action<zk::multi>(a);
    REQUIRE(multi.ops.size() == 3);
    CHECK(multi.ops[0].type == zkr::multi_op::kind::check);
    CHECK(multi.ops[0].path == "/lock/_c_x-lock-0000000001");
    CHECK(m.promoted());
    a = m.resume(zkr::test::present_reply(multi.id));
    CHECK(find_action<atomic_out::lock_done>(a));
    const auto* f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK(f->succeeded);
    CHECK(f->post == 26);
    CHECK(f->promoted_tries == 1);
}

TEST_CASE("atomic long: a node holding anything but 8 bytes, or an overflow, is refused with what was wrong") {
    atomic_long_machine m(config());
    auto a = answer(m, reads(m.resume(atomic_in::begin{{atomic_request::kind::add, 1}, session})), "42", 1, "0", 0);
    auto* f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK(f->ec == errc::invalid_argument);
    CHECK_THAT(f->reason, zkr::test::contains("holds 2 bytes"));
    a = answer(m, reads(m.resume(atomic_in::begin{{atomic_request::kind::add, 1}, session})), long_to_data(INT64_MAX), 1);
    f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK(f->ec == errc::invalid_argument);
    CHECK_THAT(f->reason, zkr::test::contains("overflows"));
}

TEST_CASE("atomic long: a promoted operation whose session was lost takes the lock again before it writes") {
    atomic_long_machine m(config(true, 2));
    auto multi = add_written(m);
    auto a = answer(m, after_pause(m, m.resume(failed_reply(multi.id, errc::bad_version))), long_to_data(20), 5);
    multi = *find_action<zk::multi>(a);
    a = answer(m, after_pause(m, m.resume(failed_reply(multi.id, errc::bad_version))), long_to_data(21), 6);
    REQUIRE(find_action<atomic_out::lock_needed>(a));
    a = answer(m, reads(m.resume(atomic_in::lock_granted{session, "/lock/l1"})), long_to_data(21), 6);
    multi = *find_action<zk::multi>(a);
    // The session is lost with the write: the lock's node went with it.
    m.resume(zk::connection_changed{connection_state::lost, 0});
    m.resume(failed_reply(multi.id, errc::session_expired));
    a = answer(m, reads(m.resume(zk::connection_changed{connection_state::reconnected, session + 1})), long_to_data(21), 6, std::nullopt);
    const auto* create = find_action<zk::create>(a);  // a receipt for the new session
    REQUIRE(create);
    a = answer(m, reads(m.resume(zkr::test::present_reply(create->id))), long_to_data(21), 6);
    CHECK(find_action<atomic_out::lock_needed>(a));
    CHECK_FALSE(find_action<zk::multi>(a));
}

TEST_CASE("atomic long: a connection failure while reading waits for the connection, then reads again") {
    atomic_long_machine m(config());
    const auto r = reads(m.resume(atomic_in::begin{{atomic_request::kind::add, 1}, session}));
    m.resume(zk::connection_changed{connection_state::suspended, session});
    auto a = m.resume(failed_reply(r[0].id, errc::connection_loss));
    CHECK(a.empty());  // no answer, no busy loop
    a = m.resume(zk::connection_changed{connection_state::reconnected, session});
    REQUIRE(reads(a).size() == 1);
    CHECK(reads(a)[0].path == "/n");
    CHECK(m.busy());
}

TEST_CASE("atomic integer: 4 big-endian bytes written and read, 8 refused with what was found, the 32-bit range kept") {
    CHECK(long_to_data(258, 4) == std::string("\0\0\x01\x02", 4));  // Curator's DistributedAtomicInteger
    CHECK(long_to_data(-2, 4) == std::string("\xff\xff\xff\xfe", 4));
    for (const std::int64_t v : {std::int64_t{INT32_MIN}, std::int64_t{-1}, std::int64_t{0}, std::int64_t{INT32_MAX}}) CHECK(long_from_data(long_to_data(v, 4), 4) == v);
    CHECK(long_from_data("", 4) == 0);
    CHECK_FALSE(long_from_data(long_to_data(1), 4));  // an atomic long's 8 bytes
    CHECK_FALSE(long_from_data("123", 4));

    auto cfg = config();
    cfg.width = 4;
    atomic_long_machine m(cfg);
    // An add writes 4 bytes.
    auto r = reads(m.resume(atomic_in::begin{{atomic_request::kind::add, 5}, session}));
    auto a = answer(m, r, long_to_data(10, 4), 4);
    const auto* create = find_action<zk::create>(a);
    REQUIRE(create);
    a = answer(m, reads(m.resume(zkr::test::present_reply(create->id))), long_to_data(10, 4), 4);
    const auto* multi = find_action<zk::multi>(a);
    REQUIRE(multi);
    CHECK(multi->ops[0].data == long_to_data(15, 4));
    a = m.resume(zkr::test::present_reply(multi->id));
    REQUIRE(find_action<atomic_out::finished>(a));
    CHECK(find_action<atomic_out::finished>(a)->post == 15);
    // A long's 8 bytes: refused, naming the width found and the one expected.
    a = answer(m, reads(m.resume(atomic_in::begin{{atomic_request::kind::add, 1}, session})), long_to_data(15), 5, "1", 1);
    auto* f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK(f->ec == errc::invalid_argument);
    CHECK_THAT(f->reason, zkr::test::contains("holds 8 bytes, not a 32-bit value (4 big-endian bytes)"));
    // Past the 32-bit range: refused, nothing written.
    a = answer(m, reads(m.resume(atomic_in::begin{{atomic_request::kind::add, 1}, session})), long_to_data(INT32_MAX, 4), 6, "1", 1);
    CHECK_FALSE(find_action<zk::multi>(a));
    f = find_action<atomic_out::finished>(a);
    REQUIRE(f);
    CHECK(f->ec == errc::invalid_argument);
    CHECK_THAT(f->reason, zkr::test::contains("overflows a 32-bit value"));
}
