/// @file
/// zkr::distributed_atomic_int: a 32-bit integer in one ZooKeeper node, changed atomically by many
/// processes (Curator's DistributedAtomicInteger, in its format).
#pragma once

#include <zkr/distributed_atomic_long.hpp>

#include <cstdint>
#include <string>

namespace zkr {

/**
 * distributed_atomic_long's recipe on a 32-bit integer kept as 4 big-endian bytes, Curator's
 * DistributedAtomicInteger format: zkr and Curator processes share one value. Everything
 * distributed_atomic_long promises holds here (exactly once through resent writes, the
 * promotion lock, what happens on connection loss and session expiry, one operation at a time per
 * object); only the width differs.
 *
 * Errors (zkr::error): as distributed_atomic_long's; invalid_argument when the node holds data
 * that is not 4 bytes (an atomic long's 8, say: the message says how many) or an add would
 * leave the 32-bit range.
 */
class distributed_atomic_int {
public:
    /// Checks the path (and the options); no I/O.
    distributed_atomic_int(client& c, std::string path, atomic_long_options options = {})
        : value_(c, std::move(path), std::move(options), 4) {}

    /// The current value (0 when the node is missing); always succeeded.
    atomic_value<std::int32_t> get() { return narrow(value_.get()); }
    /// add(1).
    atomic_value<std::int32_t> increment() { return add(1); }
    /// add(-1).
    atomic_value<std::int32_t> decrement() { return add(-1); }
    /// Adds delta (an overflow is refused: invalid_argument).
    atomic_value<std::int32_t> add(std::int32_t delta) { return narrow(value_.add(delta)); }
    /// Sets new_value only if the value is `expected`, in one try; a missing node is never created.
    atomic_value<std::int32_t> compare_and_set(std::int32_t expected, std::int32_t new_value) {
        return narrow(value_.compare_and_set(expected, new_value));
    }
    /// Sets the value whatever it is, with the tries and promotion of add().
    atomic_value<std::int32_t> try_set(std::int32_t new_value) { return narrow(value_.try_set(new_value)); }

    /// Sets the value in one unconditional write (Curator's forceSet): as distributed_atomic_long's.
    void force_set(std::int32_t value) { value_.force_set(value); }
    /// Makes the node with `value` if it does not exist (Curator's initialize): true if this call made it.
    bool initialize(std::int32_t value) { return value_.initialize(value); }

    /// The value's node path.
    const std::string& path() const noexcept { return value_.path(); }
    /// This object's receipt node now (empty before its first change).
    std::string receipt_path() const { return value_.receipt_path(); }

private:
    // Every value read or written is 4 bytes wide: it fits.
    static atomic_value<std::int32_t> narrow(const atomic_value<std::int64_t>& v) {
        return {v.succeeded, static_cast<std::int32_t>(v.pre_value), static_cast<std::int32_t>(v.post_value), v.stats};
    }

    distributed_atomic_long value_;
};

}  // namespace zkr
