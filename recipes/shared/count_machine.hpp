// The decisions of a shared count's view, as a value: events in, actions out, on zk_ops. It keeps
// one data watch on the count's node (an exists watch while the node is missing), reads again on
// every change and reconnection, and says what it read. A late reply never puts an older value
// back: a read is applied only if it is the newest asked for, and never over a newer version of
// the same node.
#pragma once

#include "../core/zk_ops.hpp"

#include <zkr/shared_count.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace zkr::detail {

namespace count_in {
/// The view begins (the node was created or found by the recipe).
struct start {};
}  // namespace count_in

namespace count_out {
/// A read of the node, applied: its value and version. changed: the value differs from the one
/// before (or it is the first).
struct value_read {
    std::int32_t value = 0;
    std::int32_t version = 0;
    std::int64_t czxid = 0;
    bool changed = false;
};
/// The node holds no 32-bit integer in the count's format: the last value stays.
struct unreadable {
    std::string data;
};
/// The node is gone: the last value stays until it is made again (an exists watch waits).
struct gone {};
/// A read failed (not no_node): the last value stays; the next reconnection reads again.
struct read_failed {
    boost::system::error_code ec;
};
}  // namespace count_out

class count_machine {
public:
    using input = std::variant<count_in::start, zk::reply, zk::watch_fired, zk::timer_due, zk::connection_changed>;
    using action = std::variant<zk::op, count_out::value_read, count_out::unreadable, count_out::gone, count_out::read_failed>;

    explicit count_machine(std::string path, count_format format = count_format::decimal_text)
        : path_(std::move(path)), format_(format) {}

    std::vector<action> resume(const input& e);

    /// The value and version last applied (nullopt before the first read).
    std::optional<std::int32_t> value() const noexcept { return value_; }
    std::int32_t version() const noexcept { return version_; }

private:
    void on(const count_in::start&);
    void on(const zk::reply& r);
    void on(const zk::watch_fired& w);
    void on(const zk::timer_due&) {}
    void on(const zk::connection_changed& c);

    void read();
    void await_creation();
    void apply(const zk::reply& r);

    std::string path_;
    count_format format_;
    std::vector<action>* out_ = nullptr;
    zk::ticket last_ticket_ = 0;
    zk::ticket read_ = 0;    // the newest getData: older replies and their watches are stale
    zk::ticket exists_ = 0;  // the newest exists, while the node is missing
    std::optional<std::int32_t> value_;
    std::int32_t version_ = -1;
    std::int64_t czxid_ = 0;
};

}  // namespace zkr::detail
