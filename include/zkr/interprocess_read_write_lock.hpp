// zkr::interprocess_read_write_lock: many readers or one writer, across processes (Curator's
// InterProcessReadWriteLock, without its downgrade and ordering bugs).
#pragma once

#include <zkr/interprocess_mutex.hpp>

#include <functional>

#include <string>

namespace zkr {

class client;

/**
 * A read-write lock shared by every process that uses the same ZooKeeper path: readers share it,
 * a writer holds it alone.
 *
 * read_lock() and write_lock() are two locks with the whole surface of interprocess_mutex
 * (Lockable and TimedLockable, so std::shared_lock is not needed: std::unique_lock and
 * std::scoped_lock work on each; re-entrant per thread; fencing_token(), state(), hold listeners,
 * stop_token(), view(), guarded_multi, async_acquire with an owned lock_hold). What that class says
 * of connection loss, session loss and release holds for both.
 *
 * Order: one queue, first come first served. A reader holds while no writer is ahead of it, so a
 * waiting writer blocks the readers that come after it and writers never starve. A writer holds
 * at the head of the queue.
 *
 * Downgrade: a thread that holds the write lock may take the read lock (at once, no waiting), then
 * release the write lock; no waiting writer gets in between (its read node takes the write node's
 * place in the queue). If the write hold was lost before the read node was made, the read acquire
 * fails with errc::lock_lost and leaves nothing behind.
 *
 * Upgrade: a thread that holds only the read lock and asks for the write lock would wait for
 * itself. It is refused at once with errc::would_deadlock (Curator blocks for ever). Release the
 * read lock first.
 *
 * Both forms are per thread: a lock_hold from async_acquire is nobody's thread, so an async read
 * acquire waits behind the write lock this thread holds, as another process's would.
 *
 * Nodes: Curator's names under `path` ("_c_<uuid>-__READ__<seq>", "_c_<uuid>-__WRIT__<seq>"), so a
 * Curator InterProcessReadWriteLock on the same path excludes zkr's and the reverse. A mutex or a
 * semaphore on the same path is refused (errc::lock_kind_mismatch).
 *
 * Cost: a reader with no writer ahead holds in one round trip. A waiter whose writer ahead leaves
 * lists the queue once more before it holds (a downgrade's reader may have joined ahead of it).
 */
class interprocess_read_write_lock {
public:
    /// Throws invalid_path for a bad path.
    interprocess_read_write_lock(client& c, std::string path);
    /// A revocable read-write lock: zkr::revoke (`zkr revoke`, Curator's Revoker) asks its holders,
    /// readers and writer, to let go. For each hold asked, once: its stop_token() is requested and
    /// on_revoke() runs, both on the client's callback thread; the hold stays held until released
    /// (as interprocess_mutex's revocable constructor). Throws invalid_argument for an empty
    /// on_revoke.
    interprocess_read_write_lock(client& c, std::string path, std::function<void()> on_revoke);
    interprocess_read_write_lock(const interprocess_read_write_lock&) = delete;
    interprocess_read_write_lock& operator=(const interprocess_read_write_lock&) = delete;
    /// Releases every hold still taken through its two locks (best effort, errors logged).
    ~interprocess_read_write_lock();

    /// The lock that readers share.
    interprocess_mutex& read_lock() noexcept { return read_; }
    /// The lock that a writer holds alone.
    interprocess_mutex& write_lock() noexcept { return write_; }

private:
    interprocess_mutex write_;  // first: the read side's plan asks it, so it must live longer
    interprocess_mutex read_;
};

}  // namespace zkr
