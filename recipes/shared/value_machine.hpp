// The decisions of a shared value's view (a shared count's, a shared value's), as a value: events
// in, actions out, on zk_ops. It keeps one data watch on the node (an exists watch while the node
// is missing), reads again on every change and reconnection, and says what it read, decoded by its
// codec (a count's format, or the bytes as they are). A late reply never puts an older value back:
// a read is applied only if it is the newest asked for, and never over a newer version of the same
// node; a value the process saw outside the watch (its own write) only if it is newer still.
#pragma once

#include "../core/zk_ops.hpp"

#include <zkr/shared_count.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace zkr::detail {

/// A count's codec: a 32-bit integer in a count_format.
struct count_codec {
    using value_type = std::int32_t;
    count_format format = count_format::decimal_text;
    count_codec(count_format f = count_format::decimal_text) : format(f) {}  // NOLINT: a format is a codec
    std::optional<std::int32_t> decode(std::string_view data) const { return count_from_data(data, format); }
};

/// A shared value's codec: the node's bytes, whatever they are.
struct bytes_codec {
    using value_type = std::string;
    std::optional<std::string> decode(std::string_view data) const { return std::string(data); }
};

namespace value_in {
/// The view begins (the node was created or found by the recipe).
struct start {};
/// The node's data and stat as this process saw them outside the watch: the stat a write of its
/// own returned, or a read of its own. Applied only if it is a newer version of the node the view
/// shows (the watch's read brings anything else).
struct observed {
    std::string data;
    zkr::stat stat;
};
}  // namespace value_in

namespace value_out {
/// A read of the node, applied: its value and version. changed: the value differs from the one
/// before (or it is the first).
template <typename T>
struct value_read {
    T value{};
    std::int32_t version = 0;
    std::int64_t czxid = 0;
    bool changed = false;
};
/// The node holds no value the codec reads: the last value stays.
struct unreadable {
    std::string data;
};
/// The node is gone: the last value stays until it is made again (an exists watch waits).
struct gone {};
/// A read failed (not no_node): the last value stays; the next reconnection reads again.
struct read_failed {
    boost::system::error_code ec;
};
}  // namespace value_out

template <typename Codec>
class value_machine {
public:
    using value_type = typename Codec::value_type;
    using value_read = value_out::value_read<value_type>;
    using input = std::variant<value_in::start, value_in::observed, zk::reply, zk::watch_fired, zk::timer_due, zk::connection_changed>;
    using action = std::variant<zk::op, value_read, value_out::unreadable, value_out::gone, value_out::read_failed>;

    explicit value_machine(std::string path, Codec codec = {}) : path_(std::move(path)), codec_(std::move(codec)) {}

    std::vector<action> resume(const input& e);

    /// The value and version last applied (nullopt before the first read).
    const std::optional<value_type>& value() const noexcept { return value_; }
    std::int32_t version() const noexcept { return version_; }

private:
    void on(const value_in::start&);
    void on(const value_in::observed& o);
    void on(const zk::reply& r);
    void on(const zk::watch_fired& w);
    void on(const zk::timer_due&) {}
    void on(const zk::connection_changed& c);

    void read();
    void await_creation();
    void apply(const std::string& data, const zkr::stat& st);

    std::string path_;
    Codec codec_;
    std::vector<action>* out_ = nullptr;
    zk::ticket last_ticket_ = 0;
    zk::ticket read_ = 0;    // the newest getData: older replies and their watches are stale
    zk::ticket exists_ = 0;  // the newest exists, while the node is missing
    std::optional<value_type> value_;
    std::int32_t version_ = -1;
    std::int64_t czxid_ = 0;
};

/// A shared count's machine, and a shared value's.
using count_machine = value_machine<count_codec>;
using bytes_machine = value_machine<bytes_codec>;

extern template class value_machine<count_codec>;
extern template class value_machine<bytes_codec>;

}  // namespace zkr::detail
