// zkr::shared_count: an integer in one ZooKeeper node, shared by processes, with change listeners.
#pragma once

#include <zkr/client.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace zkr {

/// How a count is written in its node.
enum class count_format {
    /// Decimal text ("42", "-7"): readable with any ZooKeeper tool; zkr's default.
    decimal_text,
    /// 4 bytes, a big-endian two's-complement 32-bit integer: Apache Curator's SharedCount, and
    /// Kazoo's Counter made with support_curator=True. Use it to share a count with them.
    int32_big_endian,
};

/// The node data that holds `value` in `format`.
std::string count_to_data(std::int32_t value, count_format format);
/// The count that `data` holds in `format`, or nullopt when it holds none: text that is not a
/// whole decimal 32-bit integer, or binary data not exactly 4 bytes long (Curator reads the
/// first 4 of a longer node; zkr refuses it, since that node was not written as a count).
std::optional<std::int32_t> count_from_data(std::string_view data, count_format format);

/// What a shared_count is opened with.
struct shared_count_options {
    /// How the value is written and read; every process that shares the node must use the same.
    count_format format = count_format::decimal_text;
};

/**
 * A count kept in a persistent node, as decimal text (readable with any ZooKeeper tool) or in
 * Curator's SharedCount format (shared_count_options::format): with the latter, zkr, Curator
 * (SharedCount, and a semaphore's SharedCount maximum) and Kazoo (Counter with support_curator)
 * processes share one count. Every process that opens the same path sees the same value; a watch
 * keeps count() current, and listeners hear each change. Used as a semaphore's live maximum.
 *
 * The constructor creates the node with `seed` when it does not exist (missing parents become
 * containers), then reads it; it throws zkr::error when it cannot.
 *
 * Connection loss: count() keeps the last value read; the watch is re-set and the value re-read
 * on every reconnection, and on a new session after session loss, so a change made meanwhile is
 * seen then. If the node is deleted, count() keeps its last value until the node is created again.
 */
class shared_count {
public:
    /// Opens the count at `path`, creating it with `seed` when it does not exist (see above).
    /// Throws invalid_path for a bad path, invalid_argument when the node holds no count in the
    /// format asked for (the message shows what it holds).
    shared_count(client& c, std::string path, std::int32_t seed, shared_count_options options = {});
    /// Stops re-reading the count on reconnection.
    ~shared_count();
    shared_count(const shared_count&) = delete;
    shared_count& operator=(const shared_count&) = delete;

    /// The last value read (no I/O).
    std::int32_t count() const;
    /// Sets the value for every process (an unconditional write); count() shows it once this
    /// returns, unless a newer write came first. Throws zkr::error when the write fails.
    void set_count(std::int32_t value);
    /// Sets the value only if nobody changed it since this object read `expected`; false, with no
    /// request, when count() is not `expected`, and false when someone changed the node meanwhile:
    /// count() then shows the node as read after that conflict, so a loop of
    /// `try_set_count(count(), f(count()))` makes progress. Throws zkr::error when the write
    /// fails for another reason.
    /// Connection loss: the write is resent per the retry policy; when the first copy had been
    /// applied, the resent one meets its own version change and this answers false for a write
    /// that took (as Curator's SharedCount does). Counting exactly once through drops is
    /// distributed_atomic_long's business (its receipts tell).
    bool try_set_count(std::int32_t expected, std::int32_t value);
    /// listener(new value) runs on the client's callback thread after each change this object
    /// sees, whoever made it.
    state_subscription add_listener(std::function<void(std::int32_t)> listener);
    /// The count's node path.
    const std::string& path() const noexcept { return path_; }
    /// How the value is written in the node.
    count_format format() const noexcept { return format_; }

private:
    struct state;
    client& client_;
    std::string path_;
    count_format format_;
    std::shared_ptr<state> state_;
};

}  // namespace zkr
