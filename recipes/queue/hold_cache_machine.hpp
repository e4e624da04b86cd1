// Lock caching's decisions (mutex_options::cache_hold): when a released hold's node is kept for
// this process's next acquire, and when it goes. A value: events in, one action out; no I/O, no
// clock, no threads (recipes/queue/hold_cache.hpp carries the actions out).
//
// Why keeping is safe: a kept node is a hold nobody uses. It is the lowest node of the queue, so
// every other acquire queues behind it, as behind any holder; lending it to a later acquire of
// this process is a hand-over inside the process, made only while the hold reads held (not
// doubtful: the caller's view, which also covers a pause past the session). Why a waiter is
// served: the listing that starts a keep sets a children watch on the lock's folder, and a keep
// lasts only while that watch has not fired. Another node queued fires it; the kept node then goes
// at once, or, when lent, at the end of the hold in progress (a waiter waits for one notification,
// that hold, and one delete).
#pragma once

namespace zkr::detail {

class hold_cache_machine {
public:
    enum class phase {
        empty,    ///< nothing kept
        listing,  ///< a released hold kept while the listing that sets the watch is in flight
        kept,     ///< kept, the watch armed: the next acquire takes it with no request
        lent,     ///< taken by an acquire of this process; its release comes back here
    };
    enum class action {
        none,         ///< nothing to do
        list,         ///< list the folder's children with a watch; answer with listed()
        release_now,  ///< release the hold just released, as without caching
        let_go,       ///< release the kept hold (its node goes)
        grant,        ///< hand the kept hold to the acquire that asked
    };

    /// The last level of a hold was released. fresh: it reads held for its caller. lent_one: it is
    /// the hold this cache lent.
    action released(bool fresh, bool lent_one) noexcept {
        // A second hold while one is kept, or one released after its lent one was lost: not ours.
        if (closed_ || phase_ == phase::listing || phase_ == phase::kept || (phase_ == phase::lent && !lent_one))
            return action::release_now;
        if (!fresh) {
            phase_ = phase::empty;
            return action::release_now;
        }
        if (phase_ == phase::lent) {
            // The watch not fired since it was set: nobody queued, keep it with no request. Fired:
            // someone queued (or came and went): give way now, rather than list to tell which.
            phase_ = armed_ ? phase::kept : phase::empty;
            return armed_ ? action::none : action::release_now;
        }
        phase_ = phase::listing;
        return action::list;
    }

    /// The listing answered. alone: the folder holds our node only (false on any failure).
    action listed(bool alone) noexcept {
        if (phase_ != phase::listing) return action::none;  // let go meanwhile
        if (!alone) {
            phase_ = phase::empty;
            return action::let_go;
        }
        phase_ = phase::kept;
        armed_ = true;
        return action::none;
    }

    /// The folder's children watch fired (also when it ended without its event: session lost,
    /// client closed). A watch left from an earlier keep may fire too: a needless let-go at worst.
    action changed() noexcept {
        armed_ = false;
        return let_go_kept();
    }

    /// An acquire of this process asks for the kept hold. fresh: it reads held for its caller.
    /// none: acquire as without caching (it queues, which lets a kept node go).
    action acquire(bool fresh) noexcept {
        if (phase_ != phase::kept) return action::none;
        if (!fresh) {
            phase_ = phase::empty;
            return action::let_go;
        }
        phase_ = phase::lent;
        return action::grant;
    }

    /// The mutex goes: a kept hold goes with it, a lent one when its holder releases it.
    action close() noexcept {
        closed_ = true;
        return let_go_kept();
    }

    phase current() const noexcept { return phase_; }
    /// Whether the last listing's watch is believed armed (it has not fired).
    bool watch_armed() const noexcept { return armed_; }

private:
    // A node kept (or kept while its listing is in flight) goes; a lent one stays with its holder.
    action let_go_kept() noexcept {
        if (phase_ != phase::kept && phase_ != phase::listing) return action::none;
        phase_ = phase::empty;
        return action::let_go;
    }

    phase phase_ = phase::empty;
    bool armed_ = false;
    bool closed_ = false;
};

}  // namespace zkr::detail
