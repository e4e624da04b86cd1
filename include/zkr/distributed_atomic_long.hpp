/// @file
/// zkr::distributed_atomic_long: a 64-bit integer in one ZooKeeper node, changed atomically by
/// many processes (Curator's DistributedAtomicLong, in its format).
#pragma once

#include <zkr/client.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace zkr {

class distributed_atomic_int;

/// How an atomic operation went (Curator's AtomicStats).
struct atomic_stats {
    unsigned optimistic_tries = 0;  ///< versioned writes tried without the lock
    unsigned promoted_tries = 0;    ///< ... and under the promotion lock
    std::chrono::milliseconds optimistic_time{0};  ///< from the call to the answer, or to asking for the lock
    std::chrono::milliseconds promoted_time{0};    ///< from asking for the lock to the answer
};

/// An atomic operation's answer (Curator's AtomicValue).
template <class T>
struct atomic_value {
    /// Whether the change was made (get() always succeeds). False: a compare that differed, or
    /// every try met another process's write (the value is unchanged by this call).
    bool succeeded = false;
    T pre_value{};   ///< the value before (the last one read)
    T post_value{};  ///< the value written (the value read, for get()); 0 when not succeeded
    atomic_stats stats;  ///< the tries and times it took
};

/// Curator's PromotedToLock: when the optimistic tries run out, take an interprocess_mutex and try
/// again under it.
struct atomic_promotion {
    std::string lock_path;                        ///< the mutex's path (Curator's lock path)
    std::chrono::milliseconds timeout{60'000};    ///< for taking the lock; then not succeeded
    unsigned tries = 3;                           ///< versioned writes under the lock
};

/// What a distributed_atomic_long is opened with.
struct atomic_long_options {
    /// Versioned writes tried before giving up (or promoting); at least 1.
    unsigned optimistic_tries = 10;
    /// The pause after a conflict, doubled with each try (at most 64 times).
    std::chrono::milliseconds backoff{2};
    /// Try under a lock once the optimistic tries run out.
    std::optional<atomic_promotion> promote_to_lock;
    /// 0: the receipt node is ephemeral (see below). Positive: it is a TTL node (the server must
    /// allow them: zookeeper.extendedTypesEnabled=true) that outlives a session loss, so that an
    /// operation's outcome is known even when its reply was lost with the session; the server
    /// deletes it this long after its last use if the process dies.
    std::chrono::milliseconds receipt_ttl{0};
};

/**
 * A 64-bit integer kept in a persistent node as 8 big-endian bytes, Curator's DistributedAtomicLong
 * format: zkr and Curator processes share one value. A missing or empty node reads as 0; the node
 * is made (with missing parents as containers) by the first change.
 *
 * Each change reads the value and writes the new one on the read's version; a conflict (another
 * process wrote between) is tried again after a pause, up to optimistic_tries, then, with
 * promote_to_lock, under an interprocess_mutex (Curator's PromotedToLock; its writes also check the
 * lock's node, so none runs outside the lock). When the tries run out the answer is
 * succeeded == false and the value is as others left it.
 *
 * Exactly once: unlike Curator's (CURATOR-584), a change is never applied twice nor reported
 * wrongly when a reply is lost and the request resent. Each write is a multi that also moves this
 * object's receipt node (`path/zkr-receipt-<uuid>-<n>`, a child no other recipe reads), and after
 * any failure the receipt says whether the write took. The destructor deletes it.
 *
 * Connection loss: an operation waits for the connection and goes on. Session expiry: with an
 * ephemeral receipt (the default), an operation whose write's reply was lost with the session,
 * after which someone else wrote, cannot know whether its write took: it throws zkr::error with
 * session_expired (it never guesses; Curator guesses "not applied" and may apply twice). A
 * receipt_ttl receipt removes that case.
 *
 * One operation at a time per object (calls from several threads wait their turn); several
 * objects on one path, in one process or many, are safe.
 *
 * Errors (zkr::error): invalid_path; invalid_argument when the node holds data that is not 8
 * bytes (the message says how many) or an add would overflow; closed; session_expired as above;
 * the server's refusals (no_auth, unimplemented for a TTL receipt the server does not allow).
 */
class distributed_atomic_long {
public:
    /// Checks the path (and the options); no I/O.
    distributed_atomic_long(client& c, std::string path, atomic_long_options options = {});
    /// Deletes the receipt node in the background; never throws.
    ~distributed_atomic_long();
    distributed_atomic_long(const distributed_atomic_long&) = delete;
    distributed_atomic_long& operator=(const distributed_atomic_long&) = delete;

    /// The current value (0 when the node is missing); always succeeded.
    atomic_value<std::int64_t> get();
    /// add(1).
    atomic_value<std::int64_t> increment() { return add(1); }
    /// add(-1).
    atomic_value<std::int64_t> decrement() { return add(-1); }
    /// Adds delta (an overflow is refused: invalid_argument).
    atomic_value<std::int64_t> add(std::int64_t delta);
    /// Sets new_value only if the value is `expected`, in one try; a missing node is never created
    /// (as Curator's). post_value is new_value when it succeeded.
    atomic_value<std::int64_t> compare_and_set(std::int64_t expected, std::int64_t new_value);
    /// Sets the value whatever it is, with the tries and promotion of add().
    atomic_value<std::int64_t> try_set(std::int64_t new_value);

    /// Sets the value whatever it is, in one unconditional write (making the node, with missing
    /// parents as containers, when it is missing): no tries, no lock, no receipt (Curator's
    /// forceSet). A change under way elsewhere meets its version change and tries again. Throws
    /// zkr::error when the write fails.
    void force_set(std::int64_t value);
    /// Makes the node with `value` if it does not exist (Curator's initialize): true if this call
    /// made it, false if it was there. Throws zkr::error when it cannot be made.
    bool initialize(std::int64_t value);

    /// The value's node path.
    const std::string& path() const noexcept { return path_; }
    /// This object's receipt node now (empty before its first change). A receipt made again after
    /// it went (with its session, say) gets a new name.
    std::string receipt_path() const;

private:
    friend class distributed_atomic_int;  // the same recipe, 4 bytes wide
    distributed_atomic_long(client& c, std::string path, atomic_long_options options, unsigned width);

    struct state;
    client& client_;
    std::string path_, receipt_;  // receipt_: the receipts' names' prefix
    unsigned width_ = 8;          // the value's bytes
    std::shared_ptr<state> state_;
};

}  // namespace zkr
