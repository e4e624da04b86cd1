// zkr::revoke: ask the holders of a lock to let go (Curator's revocation signal).
#pragma once

#include <string>
#include <vector>

namespace zkr {

class client;

/// The data a revoker writes to a holder's node: Curator's `RevocationSpec` signal, so zkr and
/// Curator processes can revoke each other's holds.
inline constexpr const char* revocation_signal = "__REVOKE__";

/**
 * Asks every holder of the lock at `lock_path` to let go: writes revocation_signal to each
 * holder's node. A request, not a loss: a holder that opted in (interprocess_mutex's revocable
 * constructor, fair_lock's, Curator's makeRevocable) hears it, and its hold stays held until it
 * releases. Holds that did not opt in ignore it. No waiter, revocable or not, takes the write for
 * a release: nobody gets in beside the holder.
 *
 * Mutexes (zkr's and Curator's "lock-" nodes) and read-write locks: the holders the recipes'
 * own rules name. Returns the paths of the nodes asked. Throws zkr::error: lock_not_held when
 * nothing holds the lock (also when each holder left before the request reached it),
 * invalid_argument when the path holds no mutex or read-write lock (a semaphore, a leader latch),
 * invalid_path for a bad path, and the connection errors of any request.
 */
std::vector<std::string> revoke(client& c, const std::string& lock_path);

/// Asks the holder of one node to let go (its name under lock_path, or its full path). Throws
/// lock_not_held when the node is gone.
void revoke(client& c, const std::string& lock_path, const std::string& node);

}  // namespace zkr
