// Lock caching (mutex_options::cache_hold): keeps a released hold's node for this process's next
// acquire while nobody else queues, and lets it go once someone does. It carries out
// hold_cache_machine's decisions: the listing with its children watch, the release of a kept hold.
#pragma once

#include "hold.hpp"
#include "hold_cache_machine.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

namespace zkr::detail {

class lock_driver;

/// Thread-safe. Its listing's answer and its watch run on the network thread, through weak
/// references: they do nothing once the cache is gone.
class hold_cache : public std::enable_shared_from_this<hold_cache> {
public:
    explicit hold_cache(std::shared_ptr<lock_driver> driver);

    /// The last level of h was released by its owner: true when h is kept (nothing to release),
    /// false when the caller releases it as without caching.
    bool keep(const std::shared_ptr<hold>& h);
    /// The kept hold for an acquire of this process (then nothing is sent), or null: acquire as
    /// without caching. A kept hold that no longer reads held is let go. While a release's listing
    /// is in flight, waits for its answer (a round trip, or until the connection loss is noticed),
    /// at most until deadline when given.
    std::shared_ptr<hold> take(std::optional<std::chrono::steady_clock::time_point> deadline);
    /// No keeping from now on; returns the kept hold, for the caller to release (the mutex's
    /// destructor, which waits for the delete as for its other holds).
    std::shared_ptr<hold> close();

private:
    /// The listing's reply and watch event, as send_op feeds them (zk::get_children, sent once).
    struct listing_feed;
    /// Lists the folder with the watch (listing: this keep's number, so that a late answer to an
    /// earlier keep's listing is ignored).
    void list(const std::shared_ptr<hold>& h, std::uint64_t listing);
    void on_listed(bool alone, std::uint64_t listing);
    void on_changed();
    /// When a says let_go: the kept hold goes (let_go), after lock is released.
    void let_go_kept_if(hold_cache_machine::action a, std::unique_lock<std::mutex>& lock);
    /// Releases h in the background; its outcome is only logged (at debug level: a kept hold that
    /// was lost meanwhile, which no caller is told of, is no news).
    void let_go(std::shared_ptr<hold> h);

    std::shared_ptr<lock_driver> driver_;
    std::mutex mutex_;
    std::condition_variable answered_;  // the listing answered (or the keep ended otherwise)
    hold_cache_machine machine_;   // under mutex_
    std::shared_ptr<hold> kept_;   // under mutex_: while listing or kept
    const hold* lent_ = nullptr;   // under mutex_: while lent (identity only)
    std::uint64_t listings_ = 0;   // under mutex_
};

}  // namespace zkr::detail
