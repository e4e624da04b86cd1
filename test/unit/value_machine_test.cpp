// The shared value machine (recipes/shared/value_machine.hpp), event by event, without a server: as a
// shared count (count_machine) and as a shared value of bytes (bytes_machine).
#include "../../recipes/shared/value_machine.hpp"
#include "zk_actions.hpp"

#include <zkr/error.hpp>

#include <cstdint>

#include "zkr_catch.hpp"

namespace {

using namespace zkr::detail;

// The first action of type T: an op (zk::get_data, ...) or an outcome (value_out::...).
template <typename T>
const T* find(const std::vector<count_machine::action>& actions) {
    return zkr::test::find_action<T>(actions);
}

zkr::stat stat_at(std::int32_t version, std::int64_t czxid) {
    zkr::stat st;
    st.version = version;
    st.czxid = czxid;
    return st;
}

zk::reply data_reply(zk::ticket id, std::string data, std::int32_t version, std::int64_t czxid = 100) {
    zk::reply r;
    r.id = id;
    r.data = std::move(data);
    r.stat = stat_at(version, czxid);
    return r;
}

}  // namespace

TEST_CASE("count machine: reads with a watch, says each value once changed, and reads again on a change") {
    count_machine m("/c");
    auto a = m.resume(value_in::start{});
    const auto* read = find<zk::get_data>(a);
    REQUIRE(read);
    CHECK(read->watch);
    CHECK(read->path == "/c");
    const auto first = read->id;
    a = m.resume(data_reply(first, "4", 0));
    REQUIRE(find<count_machine::value_read>(a));
    CHECK(find<count_machine::value_read>(a)->value == 4);
    CHECK(find<count_machine::value_read>(a)->changed);
    a = m.resume(zk::watch_fired{first, zkr::watch_event_type::node_data_changed});
    REQUIRE(find<zk::get_data>(a));
    const auto second = find<zk::get_data>(a)->id;
    a = m.resume(data_reply(second, "4", 1));  // written with the same value
    REQUIRE(find<count_machine::value_read>(a));
    CHECK_FALSE(find<count_machine::value_read>(a)->changed);
    CHECK(m.version() == 1);
}

TEST_CASE("count machine: a late reply or an old watch never puts an older value back") {
    count_machine m("/c");
    auto a = m.resume(value_in::start{});
    const auto first = find<zk::get_data>(a)->id;
    // A reconnection reads again before the first reply comes: the first read is stale.
    a = m.resume(zk::connection_changed{zkr::connection_state::reconnected, 1});
    const auto second = find<zk::get_data>(a)->id;
    CHECK(m.resume(data_reply(first, "1", 1)).empty());
    a = m.resume(data_reply(second, "2", 2));
    CHECK(find<count_machine::value_read>(a)->value == 2);
    // The superseded read's watch fires too: no second read for it.
    CHECK(m.resume(zk::watch_fired{first, zkr::watch_event_type::node_data_changed}).empty());
    // An older version of the same node is never applied, even on the newest read.
    a = m.resume(zk::watch_fired{second, zkr::watch_event_type::node_data_changed});
    const auto third = find<zk::get_data>(a)->id;
    CHECK_FALSE(find<count_machine::value_read>(m.resume(data_reply(third, "1", 1))));
    CHECK(m.value() == 2);
}

TEST_CASE("count machine: a deleted node keeps the last value, an exists watch waits for it, and it is read once made again") {
    count_machine m("/c");
    auto a = m.resume(value_in::start{});
    const auto first = find<zk::get_data>(a)->id;
    m.resume(data_reply(first, "7", 3));
    a = m.resume(zk::watch_fired{first, zkr::watch_event_type::node_deleted});
    const auto reread = find<zk::get_data>(a)->id;
    zk::reply gone;
    gone.id = reread;
    gone.ec = make_error_code(zkr::errc::no_node);
    a = m.resume(gone);
    CHECK(find<value_out::gone>(a));
    REQUIRE(find<zk::exists>(a));
    CHECK(find<zk::exists>(a)->watch);
    const auto wait = find<zk::exists>(a)->id;
    CHECK(m.value() == 7);
    a = m.resume(zk::watch_fired{wait, zkr::watch_event_type::node_created});
    const auto again = find<zk::get_data>(a)->id;
    // A new node (another czxid) may have a lower version: it is applied.
    a = m.resume(data_reply(again, "1", 0, 200));
    CHECK(find<count_machine::value_read>(a)->value == 1);
    // An unreadable value is said, and the last one stays.
    a = m.resume(zk::watch_fired{again, zkr::watch_event_type::node_data_changed});
    const auto bad = find<zk::get_data>(a)->id;
    a = m.resume(data_reply(bad, "many", 1, 200));
    REQUIRE(find<value_out::unreadable>(a));
    CHECK(find<value_out::unreadable>(a)->data == "many");
    CHECK(m.value() == 1);
}

TEST_CASE("count formats: decimal text, and Curator SharedCount's 4 big-endian bytes") {
    using zkr::count_format;
    CHECK(zkr::count_to_data(258, count_format::int32_big_endian) == std::string("\x00\x00\x01\x02", 4));  // Curator's, as read from its node
    CHECK(zkr::count_to_data(-1, count_format::int32_big_endian) == std::string("\xff\xff\xff\xff", 4));
    CHECK(zkr::count_to_data(-7, count_format::decimal_text) == "-7");
    for (const std::int32_t v : {0, 1, -1, 258, 65536, INT32_MAX, INT32_MIN}) {
        INFO(v);
        for (const auto f : {count_format::decimal_text, count_format::int32_big_endian})
            CHECK(zkr::count_from_data(zkr::count_to_data(v, f), f) == v);
    }
    // Not a count: the wrong length, or text that is not a whole 32-bit number.
    CHECK_FALSE(zkr::count_from_data("", count_format::int32_big_endian));  // Kazoo's Counter's node before its first change
    CHECK_FALSE(zkr::count_from_data(std::string("\x00\x01\x02", 3), count_format::int32_big_endian));
    CHECK_FALSE(zkr::count_from_data(std::string("\x00\x00\x00\x01\x00", 5), count_format::int32_big_endian));
    CHECK_FALSE(zkr::count_from_data("", count_format::decimal_text));
    CHECK_FALSE(zkr::count_from_data("12a", count_format::decimal_text));
    CHECK_FALSE(zkr::count_from_data("2147483648", count_format::decimal_text));
    // Four digits are four bytes too: each format reads its own.
    CHECK(zkr::count_from_data("1234", count_format::decimal_text) == 1234);
    CHECK(zkr::count_from_data("1234", count_format::int32_big_endian) == 0x31323334);
}

TEST_CASE("count machine: in Curator's format it reads 4 big-endian bytes, and text is not a count") {
    count_machine m("/c", zkr::count_format::int32_big_endian);
    auto a = m.resume(value_in::start{});
    const auto first = find<zk::get_data>(a)->id;
    a = m.resume(data_reply(first, std::string("\x00\x00\x01\x02", 4), 0));
    REQUIRE(find<count_machine::value_read>(a));
    CHECK(find<count_machine::value_read>(a)->value == 258);
    a = m.resume(zk::watch_fired{first, zkr::watch_event_type::node_data_changed});
    const auto second = find<zk::get_data>(a)->id;
    a = m.resume(data_reply(second, "259", 1));  // a zkr process of the text format wrote it
    REQUIRE(find<value_out::unreadable>(a));
    CHECK(find<value_out::unreadable>(a)->data == "259");
    CHECK(m.value() == 258);
}

TEST_CASE("value machine: a value seen outside the watch is shown only when it is a newer version of the node shown") {
    count_machine m("/c");
    const auto observed = [](std::string data, std::int32_t version, std::int64_t czxid = 100) {
        return value_in::observed{std::move(data), stat_at(version, czxid)};
    };
    // Before the first read there is nothing to be newer than.
    CHECK(m.resume(observed("5", 4)).empty());
    auto a = m.resume(value_in::start{});
    const auto first = find<zk::get_data>(a)->id;
    m.resume(data_reply(first, "1", 1));
    // This process's write took at version 2: shown at once, no request.
    a = m.resume(observed("2", 2));
    REQUIRE(a.size() == 1);
    REQUIRE(find<count_machine::value_read>(a));
    CHECK(find<count_machine::value_read>(a)->value == 2);
    CHECK(find<count_machine::value_read>(a)->changed);
    CHECK(m.version() == 2);
    // The same version again, an older one, or another node's: the watch brings those.
    CHECK(m.resume(observed("2", 2)).empty());
    CHECK(m.resume(observed("1", 1)).empty());
    CHECK(m.resume(observed("9", 7, 200)).empty());
    // The watch's read, sent before that write, comes back with the older version: not applied.
    a = m.resume(zk::watch_fired{first, zkr::watch_event_type::node_data_changed});
    const auto second = find<zk::get_data>(a)->id;
    CHECK(m.resume(data_reply(second, "1", 1)).empty());
    CHECK(m.value() == 2);
    // The same version from the watch: applied, not a change.
    a = m.resume(zk::watch_fired{second, zkr::watch_event_type::node_data_changed});
    const auto third = find<zk::get_data>(a)->id;
    a = m.resume(data_reply(third, "2", 2));
    REQUIRE(find<count_machine::value_read>(a));
    CHECK_FALSE(find<count_machine::value_read>(a)->changed);
}

TEST_CASE("bytes machine: any bytes are a value, and a change is a change of bytes") {
    bytes_machine m("/v");
    auto a = m.resume(value_in::start{});
    const auto first = zkr::test::find_action<zk::get_data>(a)->id;
    a = m.resume(data_reply(first, std::string("\x00\xff", 2), 0));
    const auto* r = zkr::test::find_action<bytes_machine::value_read>(a);
    REQUIRE(r);
    CHECK(r->value == std::string("\x00\xff", 2));
    CHECK(r->changed);
    a = m.resume(zk::watch_fired{first, zkr::watch_event_type::node_data_changed});
    const auto second = zkr::test::find_action<zk::get_data>(a)->id;
    a = m.resume(data_reply(second, "", 1));  // empty is a value too
    r = zkr::test::find_action<bytes_machine::value_read>(a);
    REQUIRE(r);
    CHECK(r->value.empty());
    CHECK(r->changed);
    CHECK_FALSE(zkr::test::find_action<value_out::unreadable>(a));
}
