/// @file
/// zkr::shared_value: bytes in one ZooKeeper node, shared by processes, versioned, with change
/// listeners (Curator's SharedValue).
#pragma once

#include <zkr/client.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace zkr {

/// A shared value as one read of it: the bytes and the node version they were read at. What
/// shared_value::try_set_value compares.
struct versioned_value {
    std::int32_t version = -1;  ///< The node's version (stat.version) when it held `value`.
    std::string value;          ///< The node's data.
    /// Equal when both the version and the bytes are.
    bool operator==(const versioned_value&) const = default;
};

/**
 * Bytes kept in a persistent node, as Curator's SharedValue keeps them (the node's data, nothing
 * added): zkr and Curator processes share a value on one path. Every process that opens the path
 * sees the same value; a watch keeps value() current, and listeners hear each change.
 *
 * The constructor creates the node with `seed` when it does not exist (missing parents become
 * containers), then reads it; it throws zkr::error when it cannot (invalid_path for a bad path).
 *
 * What it promises: value() is always a state the node had on the server, and never an older
 * version of the node than one it showed; once changes stop it shows the node's value.
 *
 * Connection loss: value() keeps the last value read; the watch is re-set and the value re-read
 * on every reconnection, and on a new session after session loss, so a change made meanwhile is
 * seen then. If the node is deleted, value() keeps its last value until the node is made again.
 */
class shared_value {
public:
    /// Opens the value at `path`, creating it with `seed` when it does not exist (see above).
    shared_value(client& c, std::string path, std::string seed);
    /// Stops re-reading the value on reconnection.
    ~shared_value();
    shared_value(const shared_value&) = delete;
    shared_value& operator=(const shared_value&) = delete;

    /// The last value read (no I/O).
    std::string value() const;
    /// The last value read, with its version: what try_set_value takes (no I/O).
    versioned_value versioned() const;
    /// Sets the value for every process (an unconditional write); value() shows it once this
    /// returns, unless a newer write came first. Throws zkr::error when the write fails.
    void set_value(std::string value);
    /// Sets the value only if the node is still at `previous` (its version and its bytes, as
    /// versioned() gave them): false, with no request, when versioned() is not `previous`, and
    /// false when someone changed the node meanwhile; versioned() then shows the node as read
    /// after that conflict, so a loop of `try_set_value(versioned(), f(...))` makes progress.
    /// Throws zkr::error when the write fails for another reason.
    /// Connection loss: the write is resent per the retry policy; when the first copy had been
    /// applied, the resent one meets its own version change and this answers false for a write
    /// that took (as Curator's SharedValue does).
    bool try_set_value(const versioned_value& previous, std::string value);
    /// listener(new value) runs on the client's callback thread after each change this object
    /// sees, whoever made it (a rewrite of the same bytes is not a change).
    state_subscription add_listener(std::function<void(const versioned_value&)> listener);
    /// The value's node path.
    const std::string& path() const noexcept { return path_; }

private:
    struct state;
    std::string path_;
    std::shared_ptr<state> state_;
};

}  // namespace zkr
