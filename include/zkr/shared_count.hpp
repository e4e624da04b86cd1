// zkr::shared_count: an integer in one ZooKeeper node, shared by processes, with change listeners.
#pragma once

#include <zkr/client.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace zkr {

/**
 * A count kept in a persistent node as decimal text (readable with any ZooKeeper tool). Every
 * process that opens the same path sees the same value; a watch keeps count() current, and
 * listeners hear each change. Used as a semaphore's live maximum.
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
    shared_count(client& c, std::string path, std::int32_t seed);
    /// Stops re-reading the count on reconnection.
    ~shared_count();
    shared_count(const shared_count&) = delete;
    shared_count& operator=(const shared_count&) = delete;

    /// The last value read (no I/O).
    std::int32_t count() const;
    /// Sets the value for every process (an unconditional write).
    void set_count(std::int32_t value);
    /// Sets the value only if nobody changed it since this object read `expected`; false if
    /// someone did (count() then catches up through the watch).
    bool try_set_count(std::int32_t expected, std::int32_t value);
    /// listener(new value) runs on the client's callback thread after each change this object
    /// sees, whoever made it.
    state_subscription add_listener(std::function<void(std::int32_t)> listener);
    /// The count's node path.
    const std::string& path() const noexcept { return path_; }

private:
    struct state;
    client& client_;
    std::string path_;
    std::shared_ptr<state> state_;
};

}  // namespace zkr
